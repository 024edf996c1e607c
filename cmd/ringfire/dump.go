package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/ringfire/ringfire/shm"
)

const dumpHelp = `Dump maps the ring read-only and prints its last --tail records, oldest
first, each read with a consistent (seqlock) copy of its slot: the sequence,
the slot state and the payload, as printable ASCII with other bytes shown as
dots, or as a hex dump with --hex. Records overwritten while dumping and holes
of a sparse ring are reported as such. For a blob ring the slot's blob
descriptor is shown too; the arena bytes are not dumped. Nothing is written
to the ring and no reader is registered.`

func runDump(_ context.Context, args []string, stdout, stderr io.Writer) (err error) {
	defer shm.Recover(shm.Guard(), &err) // the ring cut under us: an error naming it, not SIGBUS
	fs := newFlagSet("dump", "PATH [--tail N] [--hex]", dumpHelp, stderr)
	tail := fs.Uint64("tail", 10, "`records` to print, the newest ones (at least 1)")
	asHex := fs.Bool("hex", false, "print payloads as a hex dump")
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if *tail == 0 {
		return usagef("--tail must be at least 1")
	}
	r, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	return dumpRecords(stdout, r, *tail, *asHex)
}

func dumpRecords(w io.Writer, r *shm.Ring, n uint64, asHex bool) error {
	l := r.Layout()
	last := r.WriteSeq()
	if last == 0 {
		fmt.Fprintf(w, "%s: empty (write_seq 0)\n", r.Path())
		return nil
	}
	n = min(n, last, l.Capacity)
	first := last - n + 1
	fmt.Fprintf(w, "%s: records %d..%d of write_seq %d, %d-byte payloads\n", r.Path(), first, last, last, l.PayloadSize())
	buf := make([]byte, l.PayloadSize())
	for seq := first; seq <= last; seq++ {
		st, err := r.ReadSlot(seq, buf)
		if err != nil {
			return err
		}
		if st != shm.SlotReady {
			fmt.Fprintf(w, "seq %d: %s\n", seq, describeState(st, r.SlotSeq(seq)))
			continue
		}
		printRecord(w, seq, buf, l.Flags&shm.FlagArena != 0, asHex)
	}
	return nil
}

func describeState(st shm.SlotState, slotSeq uint64) string {
	switch st {
	case shm.SlotOverwritten:
		if slotSeq == shm.SlotWriting {
			return "overwritten (slot being rewritten)"
		}
		return fmt.Sprintf("overwritten (slot now holds %d)", slotSeq)
	case shm.SlotHole:
		return fmt.Sprintf("hole (sparse ring; slot holds %d)", slotSeq)
	}
	return st.String()
}

func printRecord(w io.Writer, seq uint64, payload []byte, blob, asHex bool) {
	fmt.Fprintf(w, "seq %d: ready", seq)
	if blob && len(payload) >= shm.DescriptorSize {
		d := shm.DecodeDescriptor(payload)
		fmt.Fprintf(w, ", blob offset %d len %d flags %#x", d.Offset, d.Len, d.Flags)
	}
	if asHex {
		fmt.Fprintf(w, "\n%s", indent(hex.Dump(payload), "    "))
		return
	}
	fmt.Fprintf(w, "\n    %s\n", printable(payload))
}

// printable shows printable ASCII bytes as themselves and others as dots.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, ln := range lines {
		if ln != "" {
			b.WriteString(prefix)
			b.WriteString(ln)
		}
	}
	return b.String()
}
