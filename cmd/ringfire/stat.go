package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ringfire/ringfire/shm"
)

const statHelp = `Stat maps the ring read-only and prints its geometry (element size,
payload size, capacity, flags by name, slots offset, reader registry, blob
arena, schema signature), its write_seq and oldest retained sequence, and every
claimed reader registry entry with its pid, name, whether the process is alive,
its cursor (the next sequence it wants) and its lag (write_seq + 1 - cursor).
A multi-producer (MODE_MPMC) ring is named so, with its claim_seq (the next
ticket a producer takes), its read_seq (the next ticket a competing consumer
takes) and the queue backlog between them. It never writes to the ring.`

// statReport is the JSON form of stat. Field names are stable.
type statReport struct {
	Path          string         `json:"path"`
	Kind          string         `json:"kind"` // "single-producer" or "multi-producer"
	ElementSize   uint32         `json:"element_size"`
	PayloadSize   int            `json:"payload_size"`
	Capacity      uint64         `json:"capacity"`
	Flags         uint32         `json:"flags"`
	FlagNames     []string       `json:"flag_names"`
	SlotsOffset   uint64         `json:"slots_offset"`
	RegistryCount uint32         `json:"registry_count"`
	ArenaOffset   uint64         `json:"arena_offset"`
	ArenaSize     uint64         `json:"arena_size"`
	SchemaSig     uint64         `json:"schema_sig"`
	WriteSeq      uint64         `json:"write_seq"`
	ClaimSeq      uint64         `json:"claim_seq"` // multi-producer: the next ticket
	ReadSeq       uint64         `json:"read_seq"`  // multi-producer: the next ticket for queue consumers
	Oldest        uint64         `json:"oldest"`    // 0 when the ring is empty
	Retained      uint64         `json:"retained"`  // records the ring can still hold
	Readers       []readerReport `json:"readers"`
}

type readerReport struct {
	Index  int    `json:"index"`
	PID    uint32 `json:"pid"`
	Name   string `json:"name"`
	Active bool   `json:"active"`
	Alive  bool   `json:"alive"`
	Cursor uint64 `json:"cursor"`
	Lag    uint64 `json:"lag"`
}

func runStat(_ context.Context, args []string, stdout, stderr io.Writer) (err error) {
	defer shm.Recover(shm.Guard(), &err) // the ring cut under us: an error naming it, not SIGBUS
	fs := newFlagSet("stat", "PATH [--json]", statHelp, stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	r, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	rep, err := newStatReport(r)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printStat(stdout, rep)
}

func newStatReport(r *shm.Ring) (*statReport, error) {
	h, err := r.Header()
	if err != nil {
		return nil, err
	}
	infos, err := r.Readers()
	if err != nil {
		return nil, err
	}
	rep := &statReport{
		Path: r.Path(), ElementSize: h.ElementSize, PayloadSize: h.PayloadSize(),
		Capacity: h.Capacity, Flags: uint32(h.Flags), FlagNames: flagNames(h.Flags),
		SlotsOffset: h.SlotsOffset, RegistryCount: h.RegistryCount,
		ArenaOffset: h.ArenaOffset, ArenaSize: h.ArenaSize, SchemaSig: h.SchemaSig,
		WriteSeq: h.WriteSeq, ClaimSeq: h.ClaimSeq, ReadSeq: h.ReadSeq, Kind: "single-producer",
		Retained: min(h.WriteSeq, h.Capacity),
		Readers:  make([]readerReport, 0, len(infos)),
	}
	if h.Flags&shm.FlagMPMC != 0 {
		rep.Kind = "multi-producer"
	}
	if h.WriteSeq > 0 {
		rep.Oldest = h.WriteSeq - rep.Retained + 1
	}
	for _, in := range infos {
		rep.Readers = append(rep.Readers, readerReport{Index: in.Index, PID: in.PID, Name: in.Name,
			Active: in.Active, Alive: in.Alive, Cursor: in.Cursor, Lag: lag(h.WriteSeq, in.Cursor)})
	}
	return rep, nil
}

// lag is how many published records a reader whose cursor (next wanted
// sequence) is c has not read yet.
func lag(writeSeq, c uint64) uint64 {
	if c > writeSeq {
		return 0
	}
	return writeSeq + 1 - c
}

var flagTable = []struct {
	f    shm.Flags
	name string
}{
	{shm.FlagLatestWins, "LATEST_WINS"},
	{shm.FlagLossless, "LOSSLESS_BACKPRESSURE"},
	{shm.FlagSPMC, "MODE_SPMC"},
	{shm.FlagMPMC, "MODE_MPMC"},
	{shm.FlagArena, "WITH_ARENA"},
	{shm.FlagRegistry, "WITH_REGISTRY"},
	{shm.FlagSparse, "SPARSE"},
}

// flagNames names the header flags as compat.md does; unknown bits are
// listed in hex.
func flagNames(f shm.Flags) []string {
	names := []string{}
	for _, t := range flagTable {
		if f&t.f != 0 {
			names = append(names, t.name)
			f &^= t.f
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(f)))
	}
	return names
}

func printStat(w io.Writer, rep *statReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "ring\t%s (%s)\n", rep.Path, rep.Kind)
	fmt.Fprintf(tw, "element_size\t%d (payload %d bytes)\n", rep.ElementSize, rep.PayloadSize)
	fmt.Fprintf(tw, "capacity\t%d\n", rep.Capacity)
	fmt.Fprintf(tw, "flags\t%#x %s\n", rep.Flags, strings.Join(rep.FlagNames, "|"))
	fmt.Fprintf(tw, "slots_offset\t%d\n", rep.SlotsOffset)
	fmt.Fprintf(tw, "registry\t%d entries\n", rep.RegistryCount)
	if rep.ArenaSize > 0 {
		fmt.Fprintf(tw, "arena\toffset %d, size %d\n", rep.ArenaOffset, rep.ArenaSize)
	} else {
		fmt.Fprintf(tw, "arena\tnone\n")
	}
	fmt.Fprintf(tw, "schema_sig\t%#016x\n", rep.SchemaSig)
	fmt.Fprintf(tw, "write_seq\t%d\n", rep.WriteSeq)
	if rep.Kind == "multi-producer" {
		fmt.Fprintf(tw, "claim_seq\t%d (next ticket; %d claimed)\n", rep.ClaimSeq, rep.ClaimSeq-min(rep.ClaimSeq, 1))
		fmt.Fprintf(tw, "read_seq\t%d (next ticket for queue consumers; backlog %d)\n", rep.ReadSeq, rep.ClaimSeq-min(rep.ClaimSeq, rep.ReadSeq))
	}
	if rep.WriteSeq == 0 {
		fmt.Fprintf(tw, "oldest\t- (empty)\n")
	} else {
		fmt.Fprintf(tw, "oldest\t%d (%d retained)\n", rep.Oldest, rep.Retained)
	}
	fmt.Fprintf(tw, "readers\t%d\n", len(rep.Readers))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Readers) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  IDX\tPID\tALIVE\tACTIVE\tCURSOR\tLAG\t  NAME\n")
	for _, rd := range rep.Readers {
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%d\t%d\t  %s\n",
			rd.Index, rd.PID, yesNo(rd.Alive), yesNo(rd.Active), rd.Cursor, rd.Lag, rd.Name)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
