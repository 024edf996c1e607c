package shm

// Push-to-read throughput across two processes: the parent pushes records
// (one by one, or in batches with PushBatch) on a lossless ring, and a
// drain child (ppEchoMain with Kind "drain") reads them with RecvBatch,
// checking that every record arrives once and in order. The lossless ring
// keeps the producer at most a ring ahead, so the push rate is the rate
// at which the other process reads.

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// ppDrainRing is the drain child: a registered reader of ring A that
// receives in batches (busy polling, pinned to its own core) until the stop
// record, failing on any record out of order.
func ppDrainRing(cfg ppConfig, deadline time.Time) error {
	defer ppPin(1)()
	c, err := NewConsumer[benchMsg](cfg.A, ReadOptions{Start: StartOldest, Name: "drain"})
	if err != nil {
		return err
	}
	defer c.Close()
	var buf [256]benchMsg
	var last uint64
	for i := 0; ; i++ {
		n := c.RecvBatch(buf[:])
		for _, m := range buf[:n] {
			if m.Seq == ppStopSeq {
				return nil
			}
			if m.Seq != last+1 || m.Pay[40] != byte(^m.Seq) {
				return fmt.Errorf("drain: record %d after %d", m.Seq, last)
			}
			last = m.Seq
		}
		if n == 0 && i&4095 == 0 && time.Now().After(deadline) {
			return fmt.Errorf("drain: no stop record before the deadline (at %d)", last)
		}
	}
}

// startDrain creates the lossless ring, starts the drain child and waits
// (bounded) until it is registered, so that no record is pushed unguarded.
func startDrain(b *testing.B) (*Producer[benchMsg], func() error) {
	dir := benchDir(b)
	a := filepath.Join(dir, "drain-a")
	p := producer[benchMsg](b, a, ProducerOptions{Capacity: benchCap, Lossless: true})
	child := ppSpawn(b, ppConfig{Kind: "drain", A: a}, nil)
	registered := func() bool {
		rs, err := p.Writer().Ring().Readers()
		if err != nil {
			b.Fatal(err)
		}
		return len(rs) == 1 && rs[0].Active
	}
	exited := false
	testenv.Await(ppStartTimeout, func() bool {
		select {
		case <-child.Done():
			exited = true
		default:
		}
		return exited || registered()
	})
	switch {
	case registered():
	case exited:
		b.Fatalf("drain child exited before registering: %v", child.Stop(0))
	default:
		b.Fatalf("drain child not registered after %v; output:\n%s", ppStartTimeout, child.Output())
	}
	stop := func() error {
		m := benchMsg{Seq: ppStopSeq}
		if _, err := p.Push(&m); err != nil {
			return err
		}
		return child.Stop(ppStopGrace)
	}
	return p, stop
}

// BenchmarkPushToProcess: Producer.Push of one 64-byte slot per op, read
// by the drain child in another process on the other core.
func BenchmarkPushToProcess(b *testing.B) {
	p, stop := startDrain(b)
	defer ppPin(0)()
	benchPushLoop(b, p)
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mmsg/s")
}

// BenchmarkPushBatch32ToProcess: the same with PushBatch of 32 records
// (one write_seq store per batch); one op is one record.
func BenchmarkPushBatch32ToProcess(b *testing.B) {
	p, stop := startDrain(b)
	defer ppPin(0)()
	batch := make([]benchMsg, benchBatch)
	var seq uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%benchBatch != 0 {
			continue
		}
		seq = benchPushBatch(b, p, batch, seq)
	}
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds()/1e6, "Mmsg/s")
}
