package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/archive"
)

const archiveStatHelp = `Stat prints the epochs of the archive in DIR: for each, the recorded ring's
geometry, its device and inode, the sequences and times it holds, its
records and gaps, and its segments (file, sequences, sealed or being
written, compressed or not, bytes on disk and of data, records, gaps).`

// archiveStat is what archive stat --json prints.
type archiveStat struct {
	Dir    string
	Epochs []epochStat
}

// epochStat is one epoch with its totals.
type epochStat struct {
	archive.EpochInfo
	Records    uint64
	GapEntries uint64
	GapRecords uint64 // the sequences held that are not records
	Size       int64  // bytes on disk of its segments' data
}

func statEpoch(ep archive.EpochInfo) epochStat {
	s := epochStat{EpochInfo: ep}
	for _, sg := range ep.Segments {
		s.Records += sg.Records
		s.GapEntries += sg.GapEntries
		s.Size += sg.Size
	}
	if held := ep.Last + 1 - ep.First; held > s.Records {
		s.GapRecords = held - s.Records
	}
	return s
}

func runArchiveStat(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("archive stat", "DIR [--json]", archiveStatHelp, stderr)
	asJSON := fs.Bool("json", false, "print the epochs as JSON")
	r, err := openArchiveArg(fs, args)
	if err != nil {
		return err
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil {
		return err
	}
	st := archiveStat{Dir: r.Dir(), Epochs: []epochStat{}}
	for _, ep := range eps {
		st.Epochs = append(st.Epochs, statEpoch(ep))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	printArchiveStat(stdout, st)
	return nil
}

func printArchiveStat(w io.Writer, st archiveStat) {
	var size int64
	segs := 0
	for _, ep := range st.Epochs {
		size += ep.Size
		segs += len(ep.Segments)
	}
	fmt.Fprintf(w, "%s: %d epochs, %d segments, %d bytes\n", st.Dir, len(st.Epochs), segs, size)
	for _, ep := range st.Epochs {
		g := ep.Source.Geometry
		fmt.Fprintf(w, "epoch %d: ring of %d slots, %d-byte payloads, arena %d bytes, flags %#x, schema %#x; dev %#x ino %d\n",
			ep.Epoch, g.Capacity, g.PayloadSize, g.ArenaSize, uint32(g.Flags), g.SchemaSig, ep.Source.Dev, ep.Source.Ino)
		if ep.Last < ep.First {
			fmt.Fprintf(w, "  empty\n")
		} else {
			fmt.Fprintf(w, "  sequences %d..%d, seen %s .. %s\n", ep.First, ep.Last, stamp(ep.FirstTime), stamp(ep.LastTime))
		}
		fmt.Fprintf(w, "  records %d, gaps %d (%d records), %d bytes in %d segments\n", ep.Records, ep.GapEntries, ep.GapRecords, ep.Size, len(ep.Segments))
		for _, sg := range ep.Segments {
			state := "being written"
			if sg.Sealed {
				state = "sealed"
			}
			if sg.Compressed {
				state += ", zstd"
			}
			fmt.Fprintf(w, "    %s  %d..%d  %s  %d bytes (data %d)  records %d, gaps %d\n",
				filepath.Base(sg.Path), sg.First, sg.Last, state, sg.Size, sg.DataSize, sg.Records, sg.GapEntries)
		}
	}
}

// stamp prints unix ns as an RFC 3339 time in UTC ("-" for none).
func stamp(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
