package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

const genHelp = `Gen creates a ring at PATH (--size-byte records, --capacity slots) and
writes synthetic records into it as its single producer: each record carries
its sequence, the wall-clock time gen wrote it (tail measures latency from
it) and a checksum over the rest (see internal/synth), so 'ringfire tail' can
validate what it reads. With --rate it paces itself to that many records per
second against a clock, writing each millisecond's records together (at
least one per batch); --rate 0 writes as fast as it can. It stops after --count records (0: when
interrupted) and prints how many records it wrote and the rate. The ring file
stays behind for stat, dump and tail. On a --lossless ring it waits for the
slowest registered reader instead of lapping it.

With --producers N it creates a multi-producer (MODE_MPMC) ring instead and
writes into it with N producer processes (this program, run again with
--join), splitting --count and --rate between them; each record still carries
the sequence (ticket) it was published at. With --join it is one more producer
of an existing multi-producer ring.`

type genConfig struct {
	rate, count, capacity uint64
	size, producers       int
	lossless, replace     bool
	join                  bool
	maxSize               maxSize
}

// producerEnv is added to the environment of the producer processes of
// --producers (tests make this binary run the CLI with it).
var producerEnv []string

func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gen", "PATH [--rate N] [--count N] [--size B] [--capacity N] [--lossless] [--replace] [--producers N | --join]", genHelp, stderr)
	var c genConfig
	fs.Uint64Var(&c.rate, "rate", 0, "`records` per second; 0 writes as fast as possible")
	fs.Uint64Var(&c.count, "count", 0, "`records` to write; 0 writes until interrupted")
	fs.IntVar(&c.size, "size", 64, fmt.Sprintf("record size in `bytes` (at least %d)", synth.MinSize))
	fs.Uint64Var(&c.capacity, "capacity", 4096, "ring capacity in `slots`, a power of two")
	fs.BoolVar(&c.lossless, "lossless", false, "create a lossless ring: wait for registered readers")
	fs.BoolVar(&c.replace, "replace", false, "replace an existing ring of another geometry (or a non-ring file)")
	fs.IntVar(&c.producers, "producers", 0, "write a multi-producer ring with this many producer `processes`")
	fs.BoolVar(&c.join, "join", false, "be one more producer of the existing multi-producer ring at PATH")
	c.maxSize = defaultMaxSize()
	fs.Var(&c.maxSize, "max-size", "refuse to create a ring file larger than `SIZE` bytes (K, M, G, T suffixes; 0: no limit but the free space)")
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if c.size < synth.MinSize {
		return usagef("--size %d is below the minimum record size %d", c.size, synth.MinSize)
	}
	if c.capacity == 0 || c.capacity&(c.capacity-1) != 0 {
		return usagef("--capacity %d is not a power of two", c.capacity)
	}
	switch {
	case c.producers < 0:
		return usagef("--producers %d is negative", c.producers)
	case c.producers > 0 && (c.lossless || c.join):
		return usagef("--producers writes a lossy ring of its own: not with --lossless or --join")
	case c.join && c.lossless:
		return usagef("--join writes a multi-producer ring, which is never lossless")
	}
	// The ring cut under gen's mapping (truncated by another process):
	// the error names the file, instead of SIGBUS killing gen.
	return shm.Protect(func() error {
		if c.producers > 0 {
			return generateMulti(ctx, stdout, path, c)
		}
		return generate(ctx, stdout, path, c)
	})
}

// sink is where generate writes: a ring's single writer, or one producer
// of a multi-producer ring.
type sink interface {
	push(ctx context.Context, rec []byte) (written bool, err error)
	ring() *shm.Ring
	Close() error
}

type single struct{ w *shm.Writer }

func (s single) push(ctx context.Context, rec []byte) (bool, error) {
	synth.Fill(rec, s.w.Next(), uint64(time.Now().UnixNano()))
	_, err := s.w.PushContext(ctx, rec)
	return err == nil, err
}

func (s single) ring() *shm.Ring { return s.w.Ring() }
func (s single) Close() error    { return s.w.Close() }

type multi struct{ w *shm.MultiWriter }

func fillSynth(seq uint64, rec []byte) { synth.Fill(rec, seq, uint64(time.Now().UnixNano())) }

func (m multi) push(_ context.Context, rec []byte) (bool, error) {
	_, err := m.w.PushFunc(rec, fillSynth)
	if errors.Is(err, shm.ErrDropped) {
		return false, nil
	}
	return err == nil, err
}

func (m multi) ring() *shm.Ring { return m.w.Ring() }
func (m multi) Close() error    { return m.w.Close() }

func openSink(path string, c genConfig) (sink, error) {
	if c.join {
		w, err := shm.OpenMultiWriter(path)
		if err != nil {
			return nil, err
		}
		if n := w.Ring().Layout().PayloadSize(); n != c.size {
			w.Close()
			return nil, usagef("--size %d: the ring at %s holds %d-byte records", c.size, path, n)
		}
		return multi{w}, nil
	}
	cfg := shm.RingConfig{PayloadSize: c.size, Capacity: c.capacity}
	if c.lossless {
		cfg.Flags |= shm.FlagLossless
	}
	w, err := shm.Create(path, cfg, shm.CreateOptions{Replace: c.replace, MaxSize: c.maxSize.opt()})
	if errors.Is(err, shm.ErrTooLarge) {
		return nil, fmt.Errorf("%w (--max-size %s)", err, &c.maxSize)
	}
	if err != nil {
		return nil, err
	}
	return single{w}, nil
}

func generate(ctx context.Context, stdout io.Writer, path string, c genConfig) error {
	s, err := openSink(path, c)
	if err != nil {
		return err
	}
	defer s.Close()
	p := newPacer(c.rate)
	rec := make([]byte, c.size)
	var written, dropped uint64
	for c.count == 0 || written+dropped < c.count {
		n, err := p.wait(ctx, written+dropped)
		if err != nil {
			break // interrupted: report what was written
		}
		if c.count > 0 {
			n = min(n, c.count-written-dropped)
		}
		if err := pushBatch(ctx, s, rec, n, &written, &dropped); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
	}
	elapsed := time.Since(p.start)
	rate := float64(written) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(stdout, "wrote %d records to %s in %.3fs: %.0f records/s, %.2f MB/s (write_seq %d)",
		written, path, elapsed.Seconds(), rate, rate*float64(c.size)/1e6, s.ring().WriteSeq())
	if c.join {
		fmt.Fprintf(stdout, ", %d dropped (slot held by a stalled producer)", dropped)
	}
	fmt.Fprintln(stdout)
	return nil
}

// pushBatch writes n records, counting each one written or dropped.
func pushBatch(ctx context.Context, s sink, rec []byte, n uint64, written, dropped *uint64) error {
	for range n {
		ok, err := s.push(ctx, rec)
		if err != nil {
			return err
		}
		if ok {
			*written++
		} else {
			*dropped++
		}
	}
	return nil
}

// generateMulti creates a multi-producer ring and runs c.producers
// processes of this program writing into it (gen --join), each with its
// share of --count and --rate; interrupting it interrupts them.
func generateMulti(ctx context.Context, stdout io.Writer, path string, c genConfig) error {
	cfg := shm.RingConfig{PayloadSize: c.size, Capacity: c.capacity}
	w, err := shm.CreateMPMC(path, cfg, shm.CreateOptions{Replace: c.replace, MaxSize: c.maxSize.opt()})
	if errors.Is(err, shm.ErrTooLarge) {
		return fmt.Errorf("%w (--max-size %s)", err, &c.maxSize)
	}
	if err != nil {
		return err
	}
	defer w.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	start := time.Now()
	n := uint64(c.producers)
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for i := range n {
		count := c.count / n
		if i < c.count%n {
			count++
		}
		if c.count > 0 && count == 0 {
			continue
		}
		rate := c.rate / n
		if c.rate > 0 {
			rate = max(rate, 1)
		}
		cmd := exec.CommandContext(ctx, exe, "gen", path, "--join", "--size", strconv.Itoa(c.size),
			"--count", strconv.FormatUint(count, 10), "--rate", strconv.FormatUint(rate, 10))
		cmd.Env = append(os.Environ(), producerEnv...)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("producer %d: %w", i, err)
		}
		cmds[i] = cmd
	}
	var errs []error
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			errs = append(errs, fmt.Errorf("producer %d: %w: %s", i, err, bytes.TrimSpace(outs[i].Bytes())))
		}
		fmt.Fprintf(stdout, "producer %d: %s", i, outs[i].Bytes())
	}
	elapsed := time.Since(start)
	r := w.Ring()
	tickets := r.ClaimSeq() - 1
	fmt.Fprintf(stdout, "%d producers: %d tickets in %.3fs: %.0f records/s (write_seq %d)\n",
		c.producers, tickets, elapsed.Seconds(), float64(tickets)/max(elapsed.Seconds(), 1e-9), r.WriteSeq())
	return errors.Join(errs...)
}

// pacer spreads records over time at a fixed rate: record i is due at
// start + i/rate. It hands out batches of about a millisecond's worth of
// records and sleeps until a whole batch is due, so a fast rate costs one
// sleep per batch, not per record.
type pacer struct {
	rate  float64 // records per second, 0 = unpaced
	batch uint64
	start time.Time
	timer *time.Timer
}

func newPacer(rate uint64) *pacer {
	p := &pacer{rate: float64(rate), batch: 1024, start: time.Now()}
	if rate > 0 {
		p.batch = max(1, rate/1000)
	}
	return p
}

// wait blocks until records may be written after the first written ones and
// returns how many (at least 1), or ctx's error when it is cancelled.
func (p *pacer) wait(ctx context.Context, written uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if p.rate == 0 {
		return p.batch, nil
	}
	for {
		// Records 0..due-1 are due by now.
		due := uint64(time.Since(p.start).Seconds()*p.rate) + 1
		if due >= written+p.batch {
			return p.batch, nil
		}
		at := p.start.Add(time.Duration(float64(written+p.batch-1) / p.rate * float64(time.Second)))
		if err := p.sleep(ctx, time.Until(at)); err != nil {
			return 0, err
		}
	}
}

func (p *pacer) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	case <-p.timer.C:
		return nil
	}
}
