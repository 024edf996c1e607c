package shm

// Push benchmarks with a reader draining the ring at the same time, on its
// own OS thread: lossy (lapped/op) and lossless (waits/op).

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// benchDrainer is a reader goroutine, locked to its OS thread, that drains
// a ring with RecvBatch while the benchmark goroutine pushes.
type benchDrainer struct {
	c        *Consumer[benchMsg]
	lossless bool
	final    atomic.Uint64 // last sequence pushed, set before stop
	stop     atomic.Bool
	done     chan error
}

// benchIdleLimit bounds how long the drainer may see an empty ring before it
// gives up.
const benchIdleLimit = 10 * time.Second

func startDrainer(c *Consumer[benchMsg], lossless bool) *benchDrainer {
	d := &benchDrainer{c: c, lossless: lossless, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		close(ready)
		err := d.run()
		if err != nil {
			// Unregister, so a lossless producer is not held back by a
			// reader that no longer reads; the benchmark reports err.
			c.Close()
		}
		d.done <- err
	}()
	<-ready
	return d
}

func (d *benchDrainer) run() error {
	var buf [benchBatch]benchMsg
	var last uint64
	idle := 0
	lastProgress := time.Now()
	for {
		n := d.c.RecvBatch(buf[:])
		if n > 0 {
			for i := range n {
				s := buf[i].Seq
				// Lossless: every record, in order. Lossy: increasing, laps
				// may skip some.
				if s <= last || (d.lossless && s != last+1) || buf[i].Pay[40] != byte(^s) {
					return fmt.Errorf("drainer: record %d after %d (payload %#x)", s, last, buf[i].Pay[40])
				}
				last = s
			}
			idle = 0
			continue
		}
		idle++
		if idle&1023 != 0 {
			continue
		}
		if d.stop.Load() && d.c.Reader().Next() > d.final.Load() {
			return nil
		}
		if now := time.Now(); idle == 1024 {
			lastProgress = now
		} else if now.Sub(lastProgress) > benchIdleLimit {
			return fmt.Errorf("drainer: no record for %v (next %d, stop %v)", benchIdleLimit, d.c.Reader().Next(), d.stop.Load())
		}
	}
}

// finish stops the drainer once it has read up to final and waits for it.
func (d *benchDrainer) finish(final uint64) error {
	d.final.Store(final)
	d.stop.Store(true)
	select {
	case err := <-d.done:
		return err
	case <-time.After(2 * benchIdleLimit):
		return fmt.Errorf("drainer did not stop within %v", 2*benchIdleLimit)
	}
}

func benchPushWithReader(b *testing.B, lossless bool) {
	p, path := benchProducer(b, ProducerOptions{Capacity: benchCap, Lossless: lossless})
	c := consumer[benchMsg](b, path, ReadOptions{Start: StartOldest, Name: "bench-drainer"})
	if c.Reader().Registered() != lossless {
		b.Fatalf("reader registered = %v on a lossless=%v ring", c.Reader().Registered(), lossless)
	}
	d := startDrainer(c, lossless)
	seq := benchPushLoop(b, p)
	if err := d.finish(seq); err != nil {
		b.Fatal(err)
	}
	recv, lapped := c.Reader().Received(), c.Lapped()
	if recv+lapped != seq || (lossless && lapped != 0) {
		b.Fatalf("reader received %d and lapped %d of %d records", recv, lapped, seq)
	}
	b.ReportMetric(float64(lapped)/float64(b.N), "lapped/op")
	if lossless {
		b.ReportMetric(float64(p.Writer().Stats().Backpressure)/float64(b.N), "waits/op")
	}
}

// BenchmarkPushLossyReader: Producer.Push on a lossy ring while a reader
// goroutine (its own OS thread, the other core) drains it with RecvBatch;
// lapped/op is the fraction of records the reader missed.
func BenchmarkPushLossyReader(b *testing.B) { benchPushWithReader(b, false) }

// BenchmarkPushLosslessReader: Producer.Push on a lossless ring with one
// registered reader draining it as above; the producer waits whenever the
// reader is a full ring behind (waits/op: pushes that found the gate
// closed). The reader must see every record.
func BenchmarkPushLosslessReader(b *testing.B) { benchPushWithReader(b, true) }
