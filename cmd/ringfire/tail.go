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

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

const tailHelp = `Tail attaches a reader to a ring written by 'ringfire gen' (registering in
the reader registry when the ring has one) and validates every record it
receives: the checksum must match and the sequence embedded in the record must
equal the ring sequence it was read at. It prints each record unless --quiet,
and at the end (after --count records, after --timeout without a record, or
when interrupted) the totals: received; lapped, the records tail lost after
it started (the ring overwrote them before they were read, or a mirror ring
never got them); gaps, the sequence jumps between consecutive records;
checksum errors and sequence mismatches; the sequences read; and where it
started. Tail starts at the first record it reads: the sequences --from asked
for before it were not there to read (gone before tail attached, or never in
the ring, as on a mirror ring that began at the source's latest record) and
are told apart, not counted as lapped. Once tail has caught up with the
ring's newest record it also measures each record's latency, from the
timestamp gen wrote into it to tail reading it (one clock: the same host, or
network namespaces sharing it), and prints its p50, p99 and maximum. It
exits with an error if any record failed validation.

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

	// Where tail started. A fresh reader (the first, or one on a ring
	// numbered afresh) counts in lost() what it skipped before its first
	// record: sequences gone before it attached, holes before a sparse
	// ring's first record. base is that count, which tail did not lose.
	// asked is the first sequence --from asked for (the ring's oldest for
	// --from oldest), before the count from it to the first record read.
	fresh         bool
	asked, before uint64
	base          uint64 // the current reader's lost() that tail did not lose
	lostEarlier   uint64 // lost on rings replaced since

	// Latency, stamp to read, of the records read once caught up (live).
	live bool
	lat  *hdrhistogram.Histogram

	path       string            // the ring's path, to reattach
	wait       *shm.WaitStrategy // the reader's wait, to reattach
	reattached int               // rings replaced under us and reattached
}

// maxLatency bounds the latencies recorded; longer ones count as this.
const maxLatency = 10 * time.Second

func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tail", "PATH [--from latest|oldest|N | --queue] [--count N] [--timeout D] [--quiet]", tailHelp, stderr)
	from := fs.String("from", "latest", "where to start: `latest` (the newest record), oldest, head (the next one) or a sequence number")
	t := newTailer(stdout, stderr)
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
	t.begin(true)
	defer func() { t.rd.Close() }() // the reader of the last ring reattached
	if n := t.rd.Ring().Layout().PayloadSize(); n < synth.MinSize {
		return fmt.Errorf("%s: %d-byte payloads cannot hold synthetic records (at least %d bytes); was it written by 'ringfire gen'?", path, n, synth.MinSize)
	}
	err = t.follow(ctx)
	t.summary()
	if ferr := t.out.Flush(); err == nil {
		err = ferr
	}
	if err == nil && t.badSum+t.badSeq > 0 {
		err = fmt.Errorf("validation failed: %d checksum errors and %d sequence mismatches in %d records", t.badSum, t.badSeq, t.received)
	}
	return err
}

// newTailer makes a tailer that prints to stdout (buffered: Flush at the
// end) and reports validation errors and reattachments on stderr.
func newTailer(stdout, stderr io.Writer) *tailer {
	return &tailer{out: bufio.NewWriter(stdout), errOut: stderr, lat: hdrhistogram.New(1, int64(maxLatency), 2)}
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

// begin makes the reader just opened tail's own. A fresh one (the first,
// or one on a ring numbered afresh) starts tail anew: what it skipped on
// attaching is not lost by tail, nor what it skips before its first record
// (check calls start). A reattached one going on after the last record
// read counts all it skips: records tail missed between the two rings.
func (t *tailer) begin(fresh bool) {
	t.fresh, t.base = false, 0
	rd, ok := t.rd.(*shm.Reader)
	if !fresh || !ok {
		return
	}
	t.fresh, t.base = true, rd.Lapped()
	if t.received == 0 {
		t.asked = rd.Next() - rd.Lapped()
	}
}

// lostAfterStart counts the records tail lost since it started.
func (t *tailer) lostAfterStart() uint64 { return t.lostEarlier + t.lost() - t.base }

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
		if !t.live {
			t.live = t.caughtUp()
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
			if err := t.rd.Ring().Shrunk(); err != nil {
				return err // cut under us, though no lost page was read yet: follow waits
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
		if ts, ok := t.check(seq, buf); ok {
			t.measure(ts)
		}
	}
	return nil
}

// follow runs loop with the fault guard: a ring cut under its mapping
// (truncated by another process) is reported once, naming the file, and
// tail waits for a valid ring at the path and goes on there, as after a
// replaced ring.
func (t *tailer) follow(ctx context.Context) error {
	for {
		err := shm.Protect(func() error { return t.loop(ctx) })
		if !errors.Is(err, shm.ErrTruncated) {
			return err
		}
		fmt.Fprintf(t.errOut, "tail: %v; waiting for a valid ring at %s\n", err, t.path)
		if err := t.awaitRing(ctx); err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// awaitRing polls the path every 50 ms until a valid ring is there
// (nothing, a cut file or one still being created are waited for; ctx's
// end returns nil), then reattaches to it.
func (t *tailer) awaitRing(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := shm.Open(t.path, shm.OpenOptions{})
		if err == nil {
			r.Close()
			if err := shm.Protect(t.reattach); !errors.Is(err, shm.ErrTruncated) {
				return err // reattached, or failed
			}
		} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, shm.ErrTruncated) && !errors.Is(err, shm.ErrMagic) {
			return fmt.Errorf("reattach %s: %w", t.path, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
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
	old, oldLost, lost := t.rd, t.lostAfterStart(), t.lost
	if err := t.open(t.path, opts, t.wait); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // not there yet: the next slice looks again
		}
		return fmt.Errorf("reattach %s: %w", t.path, err)
	}
	fresh := t.received == 0
	if w := t.rd.Ring().WriteSeq(); t.received > 0 && w < t.last {
		// Numbered afresh (a restarted producer): from its oldest.
		t.rd.Close()
		if err := t.open(t.path, shm.ReadOptions{Start: shm.StartOldest}, t.wait); err != nil {
			t.rd, t.lost = old, lost
			return fmt.Errorf("reattach %s: %w", t.path, err)
		}
		fresh = true
	}
	old.Close()
	t.lostEarlier = oldLost
	t.begin(fresh)
	t.reattached++
	fmt.Fprintf(t.errOut, "tail: %s was replaced (a new producer, or a mirror's fresh ring); reattached\n", t.path)
	return nil
}

// check validates the record read at ring sequence seq and returns its
// timestamp, ok if it is valid. It prints the record's age unless --quiet.
func (t *tailer) check(seq uint64, rec []byte) (ts uint64, ok bool) {
	t.received++
	if t.fresh {
		t.start(seq)
	}
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
		return 0, false
	case got != seq:
		t.badSeq++
		t.report("seq %d: record carries sequence %d", seq, got)
		return 0, false
	case !t.quiet:
		age := time.Since(time.Unix(0, int64(ts)))
		fmt.Fprintf(t.out, "seq %d ok, age %v\n", seq, age.Round(time.Microsecond))
	}
	return ts, true
}

// start marks seq, the first record of a fresh reader, as where tail
// started: what the reader skipped before it (holes before a sparse
// ring's first record) was not tail's to lose.
func (t *tailer) start(seq uint64) {
	t.fresh = false
	t.base = t.lost()
	if t.received == 1 && seq > t.asked {
		t.before = seq - t.asked
	}
}

// caughtUp reports whether tail has read every record published so far:
// the records it reads from then on are read live, as they come.
func (t *tailer) caughtUp() bool {
	r := t.rd.Ring()
	if rd, ok := t.rd.(*shm.Reader); ok {
		return rd.Next() > r.WriteSeq()
	}
	return r.ReadSeq() > r.WriteSeq()
}

// measure records the latency of a valid record stamped ts, from the
// stamp to now, once tail reads live: the age of a record read from a
// backlog measures the backlog, not the path from producer to reader.
func (t *tailer) measure(ts uint64) {
	if t.live {
		age := time.Now().UnixNano() - int64(ts)
		t.lat.RecordValue(min(max(age, 1), int64(maxLatency)))
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
		t.received, lost, t.lostAfterStart(), t.gaps, t.badSum, t.badSeq)
	if t.received > 0 {
		fmt.Fprintf(t.out, " (seq %d..%d)", t.first, t.last)
	}
	switch {
	case t.before == 1:
		fmt.Fprintf(t.out, "; started at seq %d: seq %d was not in the ring when tail attached", t.first, t.asked)
	case t.before > 1:
		fmt.Fprintf(t.out, "; started at seq %d: seq %d..%d were not in the ring when tail attached", t.first, t.asked, t.first-1)
	}
	if n := t.lat.TotalCount(); n > 0 {
		q := func(p float64) time.Duration { return time.Duration(t.lat.ValueAtQuantile(p)) }
		fmt.Fprintf(t.out, "; latency from gen's stamp p50 %v, p99 %v, max %v (%d record%s read live)", roundLatency(q(50)),
			roundLatency(q(99)), roundLatency(time.Duration(t.lat.Max())), n, plural(int(n)))
	}
	if t.reattached > 0 {
		fmt.Fprintf(t.out, "; rings replaced and reattached %d", t.reattached)
	}
	if t.idle {
		fmt.Fprintf(t.out, "; stopped after %v without a record", t.timeout)
	}
	fmt.Fprintln(t.out)
}

// roundLatency keeps three significant digits or so: 12.3µs, 1.24ms.
func roundLatency(d time.Duration) time.Duration {
	switch {
	case d < 10*time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	case d < time.Millisecond:
		return d.Round(100 * time.Nanosecond)
	case d < time.Second:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
