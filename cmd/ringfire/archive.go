package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/shm"
)

const archiveHelp = `Archive looks at the archive in DIR that 'ringfire record' writes, read-only
(also while a recorder appends to it):

  stat    its epochs (one per ring a recorder followed: a producer restart
          begins the next), each with the ring's geometry, device and inode,
          the sequences and times it holds, its records and gaps, and its
          segments with their sizes, sealed and compressed or not (--json)
  verify  reads every entry of every segment, checking its CRC, its fields
          and its order, and each sealed segment's index against its data;
          prints each problem with the file it is in and exits with status 1
          when there is one (a torn last entry of the segment being written is
          a crash the next recorder cuts, reported but not a problem)
  dump    prints entries of an epoch (the last by default): the last --tail
          sequences' entries, or with --from SEQ those from SEQ on (at most
          --count), each record with the time it was seen and its payload as
          printable ASCII or, with --hex, a hex dump; gaps with their range`

func runArchive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: ringfire archive stat|verify|dump DIR [flags]\n\n%s\n", archiveHelp)
		return usagef("missing stat, verify or dump")
	}
	switch args[0] {
	case "stat":
		return runArchiveStat(args[1:], stdout, stderr)
	case "verify":
		return runArchiveVerify(args[1:], stdout, stderr)
	case "dump":
		return runArchiveDump(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stderr, "usage: ringfire archive stat|verify|dump DIR [flags]\n\n%s\n", archiveHelp)
		return nil
	}
	return usagef("unknown archive command %q: want stat, verify or dump", args[0])
}

// openArchiveArg parses an archive subcommand's flags and its DIR, and
// opens the archive there.
func openArchiveArg(fs *flag.FlagSet, args []string) (*archive.Reader, error) {
	dir, err := parseArgs(fs, args, "DIR")
	if err != nil {
		return nil, helpOr(err)
	}
	return archive.Open(dir[0])
}

// errVerify: archive verify found a problem (exit status 1).
var errVerify = errors.New("the archive has problems")

func runArchiveVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("archive verify", "DIR", "Verify reads every entry of every segment of the archive in DIR, checking\nits CRC, its fields and its order, and each sealed segment's index against\nits data. It prints each problem with its file and exits with status 1 when\nthere is one.", stderr)
	r, err := openArchiveArg(fs, args)
	if err != nil {
		return err
	}
	defer r.Close()
	rep, err := r.Verify()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: segments %d, records %d, gaps %d (%d records), %d data bytes read\n",
		r.Dir(), rep.Segments, rep.Records, rep.Gaps, rep.GapRecords, rep.Bytes)
	if rep.Tail != nil {
		fmt.Fprintf(stdout, "torn tail (a write under way, or a crash the next recorder cuts): %v\n", rep.Tail)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "PROBLEM: %v\n", p)
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%s: %w: %d segments fail their checks", r.Dir(), errVerify, len(rep.Problems))
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

func runArchiveDump(args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("archive dump", "DIR [--epoch N] [--from SEQ [--count N] | --tail N] [--hex]",
		"Dump prints entries of one epoch of the archive in DIR: records with their\nsequence, the time the recorder saw them and their payload; gaps with the\nsequences they cover.", stderr)
	epoch := fs.Uint64("epoch", 0, "the epoch `N` to dump (0: the archive's last)")
	from := fs.Uint64("from", 0, "dump the entries from sequence `SEQ` on (0: the last --tail)")
	count := fs.Uint64("count", 0, "with --from, at most `N` entries (0: to the end)")
	tail := fs.Uint64("tail", 10, "without --from, the entries of the last `N` sequences (at least 1)")
	asHex := fs.Bool("hex", false, "print payloads as a hex dump")
	dir, err := parseArgs(fs, args, "DIR")
	if err != nil {
		return helpOr(err)
	}
	if *tail == 0 {
		return usagef("--tail 0: want at least 1")
	}
	if *count != 0 && *from == 0 {
		return usagef("--count %d: goes with --from", *count)
	}
	r, err := archive.Open(dir[0])
	if err != nil {
		return err
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil {
		return err
	}
	ep, err := pickEpoch(eps, *epoch, dir[0])
	if err != nil {
		return err
	}
	seq, n := *from, *count
	if seq == 0 {
		seq = ep.Last - min(*tail, ep.Last-ep.First+1) + 1
	}
	fmt.Fprintf(stdout, "%s: epoch %d, sequences %d..%d, %d-byte payloads\n", dir[0], ep.Epoch, ep.First, ep.Last, ep.Source.PayloadSize)
	c, err := r.Seek(ep.Epoch, seq)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := uint64(0); n == 0 || i < n; i++ {
		e, err := c.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		printEntry(stdout, e, ep.Source.Blob(), *asHex)
	}
	return nil
}

// pickEpoch is epoch n of eps (0: the last).
func pickEpoch(eps []archive.EpochInfo, n uint64, dir string) (archive.EpochInfo, error) {
	if len(eps) == 0 {
		return archive.EpochInfo{}, fmt.Errorf("%s: the archive is empty", dir)
	}
	if n == 0 {
		return eps[len(eps)-1], nil
	}
	for _, ep := range eps {
		if ep.Epoch == n {
			return ep, nil
		}
	}
	return archive.EpochInfo{}, usagef("--epoch %d: %s holds epochs %d..%d", n, dir, eps[0].Epoch, eps[len(eps)-1].Epoch)
}

// printEntry prints one entry as dump prints a record.
func printEntry(w io.Writer, e archive.Entry, blob, asHex bool) {
	at := time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano)
	if e.Kind == archive.KindGap {
		fmt.Fprintf(w, "seq %d..%d: gap (%d records the recorder could not read), seen %s\n", e.Seq, e.Last, e.Last-e.Seq+1, at)
		return
	}
	fmt.Fprintf(w, "seq %d: record, seen %s, %d bytes", e.Seq, at, len(e.Rec))
	if blob && len(e.Rec) >= shm.DescriptorSize {
		d := shm.DecodeDescriptor(e.Rec)
		fmt.Fprintf(w, ", blob of %d bytes", d.Len)
	}
	if asHex {
		fmt.Fprintf(w, "\n%s", indent(hex.Dump(e.Rec), "    "))
		return
	}
	fmt.Fprintf(w, "\n    %s\n", printable(e.Rec))
}
