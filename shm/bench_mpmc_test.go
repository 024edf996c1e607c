package shm

// Benchmarks of batch publication, multi-producer pushes, competing
// consumers and the multiplexer (64-byte slots, benchMsg records).

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkPushBatch32LossyReader: Producer.PushBatch of 32 records (one
// write_seq store per batch) on a lossy ring while a reader goroutine on
// its own OS thread drains it with RecvBatch. One op is one batch; ns/msg
// is the time per record, lapped/msg the fraction the reader missed.
func BenchmarkPushBatch32LossyReader(b *testing.B) {
	p, path := benchProducer(b, ProducerOptions{Capacity: benchCap})
	c := consumer[benchMsg](b, path, ReadOptions{Start: StartOldest})
	d := startDrainer(c, false)
	batch := make([]benchMsg, benchBatch)
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		seq = benchPushBatch(b, p, batch, seq)
	}
	if err := d.finish(seq); err != nil {
		b.Fatal(err)
	}
	if recv, lapped := c.Reader().Received(), c.Lapped(); recv+lapped != seq {
		b.Fatalf("reader received %d and lapped %d of %d records", recv, lapped, seq)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/msg")
	b.ReportMetric(float64(c.Lapped())/float64(seq), "lapped/msg")
}

// benchPushBatch stamps batch as the records after seq, pushes it with
// PushBatch and returns the last sequence.
func benchPushBatch(b *testing.B, p *Producer[benchMsg], batch []benchMsg, seq uint64) uint64 {
	for i := range batch {
		benchStamp(&batch[i], seq+1+uint64(i))
	}
	last, err := p.PushBatch(batch)
	if err != nil || last != seq+uint64(len(batch)) {
		b.Fatalf("PushBatch after %d: %d, %v", seq, last, err)
	}
	return last
}

// BenchmarkMpmcPush: MultiWriter.Push by 1, 2 and 4 producers (goroutines,
// each with its own mapping, as separate processes would have) into one
// MPMC ring nobody reads. ns/op is wall time per record of all producers
// together; dropped/op counts ErrDropped pushes (a producer lapped while
// it waited for its slot).
func BenchmarkMpmcPush(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("producers=%d", n), func(b *testing.B) { benchMpmcPush(b, n) })
	}
}

func benchMpmcPush(b *testing.B, producers int) {
	path := filepath.Join(benchDir(b), "ring")
	first, err := CreateMPMC(path, RingConfig{PayloadSize: 56, Capacity: benchCap}, CreateOptions{})
	closeAtEnd(b, first, err)
	ws := make([]*MultiWriter, producers)
	for i := range ws {
		w, err := OpenMultiWriter(path)
		ws[i] = closeAtEnd(b, w, err)
	}
	per := b.N/producers + 1
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m benchMsg
			p := bytesOf(&m)
			for range per {
				if _, err := w.Push(p); err != nil && !errors.Is(err, ErrDropped) {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	var dropped uint64
	for _, w := range ws {
		dropped += w.Stats().Dropped
	}
	if got := first.Ring().ClaimSeq() - 1; got != uint64(per*producers) {
		b.Fatalf("%d tickets taken, want %d", got, per*producers)
	}
	b.ReportMetric(float64(dropped)/float64(per*producers), "dropped/op")
}

// BenchmarkQueueTryRecv: a competing consumer's successful
// MpmcQueueConsumer.TryRecv (one read_seq CAS and a seqlock read), the
// ring refilled while the timer is stopped. Every ticket is checked.
func BenchmarkQueueTryRecv(b *testing.B) {
	path := filepath.Join(benchDir(b), "ring")
	p, err := NewMpmcProducer[benchMsg](path, MpmcOptions{Capacity: benchCap})
	closeAtEnd(b, p, err)
	c, err := NewMpmcQueueConsumer[benchMsg](path, QueueOptions{})
	closeAtEnd(b, c, err)
	var m benchMsg
	var pushed, want uint64
	b.ReportAllocs()
	for b.Loop() {
		if want == pushed {
			b.StopTimer()
			for range benchChunk {
				benchStamp(&m, pushed+1)
				if s, err := p.Push(&m); err != nil || s != pushed+1 {
					b.Fatalf("push %d: %d, %v", pushed+1, s, err)
				}
				pushed++
			}
			b.StartTimer()
		}
		want++
		if !c.TryRecv(&m) || m.Seq != want || c.Seq() != want {
			b.Fatalf("TryRecv: record %d at ticket %d, want %d", m.Seq, c.Seq(), want)
		}
	}
	if c.Dropped() != 0 {
		b.Fatalf("%d dropped", c.Dropped())
	}
}

// BenchmarkMux4TryRecv: RingMultiplexer.TryRecv round-robin over four
// rings that all hold records (each refilled while the timer is stopped).
func BenchmarkMux4TryRecv(b *testing.B) {
	const rings = 4
	m := NewRingMultiplexer[benchMsg](RoundRobin, nil)
	refills := make([]benchRefill, rings)
	for i := range rings {
		p, path := benchProducer(b, ProducerOptions{Capacity: benchCap})
		refills[i].p = p
		m.Add(consumer[benchMsg](b, path, ReadOptions{Start: StartHead}))
	}
	var v benchMsg
	var next [rings]uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		refills[i%rings].take(b, 1)
		o, ok := m.TryRecv(&v)
		if !ok || o.Index != i%rings || v.Seq != next[o.Index]+1 {
			b.Fatalf("TryRecv %d: %+v, %v, record %d", i, o, ok, v.Seq)
		}
		next[o.Index] = v.Seq
	}
}
