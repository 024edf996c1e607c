package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

const tailHelp = `Tail attaches a reader to a ring written by 'ringfire gen' (registering in
the reader registry when the ring has one) and validates every record it
receives: the checksum must match and the sequence embedded in the record must
equal the ring sequence it was read at. It prints each record unless --quiet,
and at the end (after --count records, after --timeout without a record, or
when interrupted) the totals: received, lapped (records the ring overwrote
before they were read), gaps (sequence jumps between consecutive records, i.e.
laps observed as jumps), checksum errors and sequence mismatches. It exits
with an error if any record failed validation.

With --queue it is a competing consumer of a multi-producer ring (written by
'gen --producers N'): it takes records from the ring's shared read_seq, so
each record goes to exactly one of the ring's queue consumers; gaps are then
records others took, and the totals count dropped records (overwritten, or
never finished by their producer) instead of lapped ones.`

// maxReported bounds the validation errors printed one by one.
const maxReported = 10

// source is what tail reads from: a broadcast reader or a queue consumer.
type source interface {
	Recv(dst []byte, timeout time.Duration) (uint64, error)
	Ring() *shm.Ring
	Close() error
}

type tailer struct {
	rd      source
	lost    func() uint64 // lapped (reader) or dropped (queue consumer)
	queue   bool
	out     *bufio.Writer
	errOut  io.Writer
	count   uint64
	timeout time.Duration
	quiet   bool

	received, gaps, badSum, badSeq uint64
	first, last                    uint64
	idle                           bool // stopped by --timeout

	path       string            // the ring's path, to reattach
	wait       *shm.WaitStrategy // the reader's wait, to reattach
	reattached int               // rings replaced under us and reattached
}

func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tail", "PATH [--from latest|oldest|N | --queue] [--count N] [--timeout D] [--quiet]", tailHelp, stderr)
	from := fs.String("from", "latest", "where to start: `latest` (the newest record), oldest, head (the next one) or a sequence number")
	t := &tailer{errOut: stderr}
	fs.Uint64Var(&t.count, "count", 0, "stop after this many `records`; 0 never stops")
	fs.DurationVar(&t.timeout, "timeout", 0, "stop when no record arrives for this `duration` (e.g. 2s); 0 waits forever")
	fs.BoolVar(&t.quiet, "quiet", false, "print only errors and the totals")
	fs.BoolVar(&t.queue, "queue", false, "consume as a competing consumer of a multi-producer ring (--from does not apply)")
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	opts, err := parseFrom(*from)
	if err != nil {
		return err
	}
	if t.timeout < 0 {
		return usagef("--timeout %v is negative", t.timeout)
	}
	wait := shm.FutexWait(64)
	if err := t.open(path, opts, &wait); err != nil {
		return err
	}
	defer t.rd.Close()
	if n := t.rd.Ring().Layout().PayloadSize(); n < synth.MinSize {
		return fmt.Errorf("%s: %d-byte payloads cannot hold synthetic records (at least %d bytes); was it written by 'ringfire gen'?", path, n, synth.MinSize)
	}
	t.out = bufio.NewWriter(stdout)
	err = t.loop(ctx)
	t.summary()
	if ferr := t.out.Flush(); err == nil {
		err = ferr
	}
	if err == nil && t.badSum+t.badSeq > 0 {
		err = fmt.Errorf("validation failed: %d checksum errors and %d sequence mismatches in %d records", t.badSum, t.badSeq, t.received)
	}
	return err
}

// open attaches the reader (or, with --queue, the queue consumer).
func (t *tailer) open(path string, opts shm.ReadOptions, wait *shm.WaitStrategy) error {
	t.path, t.wait = path, wait
	if t.queue {
		q, err := shm.OpenQueueReader(path, shm.QueueOptions{Wait: wait})
		if err != nil {
			return err
		}
		t.rd, t.lost = q, q.Dropped
		return nil
	}
	opts.Name, opts.Wait = "ringfire tail", wait
	rd, err := shm.OpenReader(path, opts)
	if err != nil {
		return err
	}
	t.rd, t.lost = rd, rd.Lapped
	return nil
}

func parseFrom(s string) (shm.ReadOptions, error) {
	switch s {
	case "latest":
		return shm.ReadOptions{Start: shm.StartLatest}, nil
	case "oldest":
		return shm.ReadOptions{Start: shm.StartOldest}, nil
	case "head":
		return shm.ReadOptions{Start: shm.StartHead}, nil
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil || seq == 0 {
		return shm.ReadOptions{}, usagef("--from %q: want latest, oldest, head or a sequence number from 1", s)
	}
	return shm.ReadOptions{Start: shm.StartSequence, Sequence: seq}, nil
}

// loop receives records until --count, --timeout or ctx says stop. It waits
// in slices of at most 100 ms so that a cancelled ctx is noticed promptly.
func (t *tailer) loop(ctx context.Context) error {
	buf := make([]byte, t.rd.Ring().Layout().PayloadSize())
	lastAt := time.Now()
	for t.count == 0 || t.received < t.count {
		if ctx.Err() != nil {
			return nil
		}
		slice := 100 * time.Millisecond
		if t.timeout > 0 {
			left := t.timeout - time.Since(lastAt)
			if left <= 0 {
				t.idle = true
				return nil
			}
			slice = min(slice, left)
		}
		seq, err := t.rd.Recv(buf, slice)
		if errors.Is(err, shm.ErrTimeout) {
			if err := t.out.Flush(); err != nil {
				return err
			}
			if t.rd.Ring().Replaced() {
				if err := t.reattach(); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		lastAt = time.Now()
		t.check(seq, buf)
	}
	return nil
}

// reattach follows a ring replaced at the path — a restarted producer, or
// a mirror that started a fresh ring (a new file) when its source
// restarted: the old mapping never moves again. It goes on after the last
// record read (from the new ring's oldest if that is gone).
func (t *tailer) reattach() error {
	opts := shm.ReadOptions{Start: shm.StartOldest}
	if t.received > 0 {
		opts = shm.ReadOptions{Start: shm.StartSequence, Sequence: t.last + 1}
	}
	old := t.rd
	if err := t.open(t.path, opts, t.wait); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // not there yet: the next slice looks again
		}
		return fmt.Errorf("reattach %s: %w", t.path, err)
	}
	if w := t.rd.Ring().WriteSeq(); t.received > 0 && w < t.last {
		// Numbered afresh (a restarted producer): from its oldest.
		t.rd.Close()
		if err := t.open(t.path, shm.ReadOptions{Start: shm.StartOldest}, t.wait); err != nil {
			t.rd = old
			return fmt.Errorf("reattach %s: %w", t.path, err)
		}
	}
	old.Close()
	t.reattached++
	fmt.Fprintf(t.errOut, "tail: %s was replaced (a new producer, or a mirror's fresh ring); reattached\n", t.path)
	return nil
}

// check validates the record read at ring sequence seq.
func (t *tailer) check(seq uint64, rec []byte) {
	t.received++
	if t.received == 1 {
		t.first = seq
	} else if seq != t.last+1 {
		t.gaps++
	}
	t.last = seq
	got, ts, err := synth.Check(rec)
	switch {
	case err != nil:
		t.badSum++
		t.report("seq %d: %v", seq, err)
	case got != seq:
		t.badSeq++
		t.report("seq %d: record carries sequence %d", seq, got)
	case !t.quiet:
		age := time.Since(time.Unix(0, int64(ts)))
		fmt.Fprintf(t.out, "seq %d ok, age %v\n", seq, age.Round(time.Microsecond))
	}
}

func (t *tailer) report(format string, args ...any) {
	switch n := t.badSum + t.badSeq; {
	case n <= maxReported:
		fmt.Fprintf(t.errOut, "tail: "+format+"\n", args...)
	case n == maxReported+1:
		fmt.Fprintf(t.errOut, "tail: more validation errors; only the totals follow\n")
	}
}

func (t *tailer) summary() {
	lost := "lapped"
	if t.queue {
		lost = "dropped"
	}
	fmt.Fprintf(t.out, "received %d, %s %d, gaps %d, checksum errors %d, sequence errors %d",
		t.received, lost, t.lost(), t.gaps, t.badSum, t.badSeq)
	if t.received > 0 {
		fmt.Fprintf(t.out, " (seq %d..%d)", t.first, t.last)
	}
	if t.reattached > 0 {
		fmt.Fprintf(t.out, "; rings replaced and reattached %d", t.reattached)
	}
	if t.idle {
		fmt.Fprintf(t.out, "; stopped after %v without a record", t.timeout)
	}
	fmt.Fprintln(t.out)
}
