package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

const genHelp = `Gen creates a ring at PATH (--size-byte records, --capacity slots) and
writes synthetic records into it as its single producer: each record carries
its sequence, a timestamp and a checksum over the rest (see internal/synth),
so 'ringfire tail' can validate what it reads. With --rate it paces itself to
that many records per second against a clock, writing in small batches;
--rate 0 writes as fast as it can. It stops after --count records (0: when
interrupted) and prints how many records it wrote and the rate. The ring file
stays behind for stat, dump and tail. On a --lossless ring it waits for the
slowest registered reader instead of lapping it.`

type genConfig struct {
	rate, count, capacity uint64
	size                  int
	lossless, replace     bool
	maxSize               maxSize
}

func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gen", "PATH [--rate N] [--count N] [--size B] [--capacity N] [--lossless] [--replace]", genHelp, stderr)
	var c genConfig
	fs.Uint64Var(&c.rate, "rate", 0, "`records` per second; 0 writes as fast as possible")
	fs.Uint64Var(&c.count, "count", 0, "`records` to write; 0 writes until interrupted")
	fs.IntVar(&c.size, "size", 64, fmt.Sprintf("record size in `bytes` (at least %d)", synth.MinSize))
	fs.Uint64Var(&c.capacity, "capacity", 4096, "ring capacity in `slots`, a power of two")
	fs.BoolVar(&c.lossless, "lossless", false, "create a lossless ring: wait for registered readers")
	fs.BoolVar(&c.replace, "replace", false, "replace an existing ring of another geometry (or a non-ring file)")
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
	return generate(ctx, stdout, path, c)
}

func generate(ctx context.Context, stdout io.Writer, path string, c genConfig) error {
	cfg := shm.RingConfig{PayloadSize: c.size, Capacity: c.capacity}
	if c.lossless {
		cfg.Flags |= shm.FlagLossless
	}
	w, err := shm.Create(path, cfg, shm.CreateOptions{Replace: c.replace, MaxSize: c.maxSize.opt()})
	if errors.Is(err, shm.ErrTooLarge) {
		return fmt.Errorf("%w (--max-size %s)", err, &c.maxSize)
	}
	if err != nil {
		return err
	}
	defer w.Close()
	p := newPacer(c.rate)
	rec := make([]byte, c.size)
	var written uint64
	for c.count == 0 || written < c.count {
		n, err := p.wait(ctx, written)
		if err != nil {
			break // interrupted: report what was written
		}
		if c.count > 0 {
			n = min(n, c.count-written)
		}
		if err := pushBatch(ctx, w, rec, n, &written); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
	}
	elapsed := time.Since(p.start)
	rate := float64(written) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(stdout, "wrote %d records to %s in %.3fs: %.0f records/s, %.2f MB/s (write_seq %d)\n",
		written, path, elapsed.Seconds(), rate, rate*float64(c.size)/1e6, w.Ring().WriteSeq())
	return nil
}

// pushBatch writes n records, counting each one written.
func pushBatch(ctx context.Context, w *shm.Writer, rec []byte, n uint64, written *uint64) error {
	for range n {
		synth.Fill(rec, w.Next(), uint64(time.Now().UnixNano()))
		if _, err := w.PushContext(ctx, rec); err != nil {
			return err
		}
		*written++
	}
	return nil
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
