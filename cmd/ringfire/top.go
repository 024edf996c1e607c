package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ringfire/ringfire/shm"
)

const topHelp = `Top maps the ring read-only and prints one line per interval: the elapsed
time, write_seq, the records published during the interval as msg/s, the
payload bytes they carry as MB/s (slot payload bytes times msg/s; for a blob
ring only the fixed slot payloads are counted, not the arena bytes), and the
lag of the slowest live registered reader ("-" when there is none). It runs
for --iterations intervals, or until interrupted when that is 0. A ring file
cut under it (truncated by another process) ends it with an error naming
the file.`

func runTop(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	defer shm.Recover(shm.Guard(), &err) // the ring cut under us: an error naming it, not SIGBUS
	fs := newFlagSet("top", "PATH [--interval-ms N] [--iterations N]", topHelp, stderr)
	intervalMS := fs.Uint64("interval-ms", 1000, "`milliseconds` between lines (at least 1)")
	iterations := fs.Uint64("iterations", 0, "lines to print; 0 runs until interrupted")
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if *intervalMS == 0 {
		return usagef("--interval-ms must be at least 1")
	}
	r, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	printTopHeader(stdout, r)
	interval := time.Duration(*intervalMS) * time.Millisecond
	return topLoop(ctx, stdout, r, interval, *iterations)
}

func printTopHeader(w io.Writer, r *shm.Ring) {
	l := r.Layout()
	what := "payload"
	if l.Flags&shm.FlagArena != 0 {
		what = "slot payload only (blob ring: arena bytes not counted)"
	}
	fmt.Fprintf(w, "# %s: %d-byte records, capacity %d; MB/s = %s\n", r.Path(), l.PayloadSize(), l.Capacity, what)
	fmt.Fprintf(w, "%9s %14s %12s %10s %12s\n", "ELAPSED", "WRITE_SEQ", "MSG/S", "MB/S", "SLOWEST_LAG")
}

func topLoop(ctx context.Context, w io.Writer, r *shm.Ring, interval time.Duration, iterations uint64) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	start := time.Now()
	prevSeq, prevAt := r.WriteSeq(), start
	payload := float64(r.Layout().PayloadSize())
	for i := uint64(0); iterations == 0 || i < iterations; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		// A cut that spares the header would leave top printing a
		// frozen ring: the file's size is checked each line.
		if err := r.Shrunk(); err != nil {
			return err
		}
		seq, now := r.WriteSeq(), time.Now()
		var delta uint64
		if seq > prevSeq {
			delta = seq - prevSeq
		}
		rate := float64(delta) / now.Sub(prevAt).Seconds()
		slowest, err := slowestLag(r, seq)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%8.2fs %14d %12.0f %10.2f %12s\n",
			now.Sub(start).Seconds(), seq, rate, rate*payload/1e6, slowest)
		prevSeq, prevAt = seq, now
	}
	return nil
}

// slowestLag is the largest lag among live active registered readers, or
// "-" when there is none.
func slowestLag(r *shm.Ring, writeSeq uint64) (string, error) {
	infos, err := r.Readers()
	if err != nil {
		return "", err
	}
	worst, found := uint64(0), false
	for _, in := range infos {
		if in.Active && in.Alive {
			worst, found = max(worst, lag(writeSeq, in.Cursor)), true
		}
	}
	if !found {
		return "-", nil
	}
	return strconv.FormatUint(worst, 10), nil
}
