package shm

import (
	"errors"
	"testing"
	"time"
)

func TestPushBatch(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 64})
	c := consumer[tick](t, path, ReadOptions{Start: StartHead})
	batch := make([]tick, 10)
	for i := range batch {
		batch[i] = tick{Seq: uint64(i + 1), Value: 3 * uint64(i+1)}
	}
	if last, err := p.PushBatch(batch); err != nil || last != 10 || p.Writer().Ring().WriteSeq() != 10 {
		t.Fatalf("PushBatch = %d, %v; write_seq %d", last, err, p.Writer().Ring().WriteSeq())
	}
	got := make([]tick, 16)
	if n := c.RecvBatch(got); n != 10 {
		t.Fatalf("RecvBatch after PushBatch = %d records, want 10", n)
	}
	for i, v := range got[:10] {
		if v != batch[i] {
			t.Fatalf("record %d = %+v, want %+v", i+1, v, batch[i])
		}
	}
	if last, err := p.PushBatch(nil); err != nil || last != 10 {
		t.Fatalf("empty PushBatch = %d, %v", last, err)
	}
	w := p.Writer()
	if _, err := w.PushBatch(make([]byte, 100), 56); !errors.Is(err, ErrInvalid) {
		t.Fatalf("PushBatch of 100 bytes in 56-byte records = %v, want ErrInvalid", err)
	}
	if _, err := w.PushBatch(make([]byte, 130), 65); !errors.Is(err, ErrInvalid) {
		t.Fatalf("PushBatch of records larger than a slot = %v, want ErrInvalid", err)
	}
	if n := testing.AllocsPerRun(100, func() { p.PushBatch(batch) }); n != 0 {
		t.Errorf("PushBatch: %v allocations", n)
	}
}

// TestPushBatchLossless: a batch longer than the ring on a lossless ring
// publishes what it stored before waiting for the reader, so the reader
// gets every record and nobody deadlocks.
func TestPushBatchLossless(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8, Lossless: true})
	c := consumer[tick](t, path, ReadOptions{Start: StartHead})
	batch := make([]tick, 50)
	for i := range batch {
		batch[i].Seq = uint64(i + 1)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.PushBatch(batch)
		done <- err
	}()
	// The writer fills the ring (the reader is at 1) and publishes what it
	// stored before waiting: without that, write_seq stays 0 and both wait.
	waitUntil(t, "the batch's first 8 records are published", func() bool { return p.Writer().Ring().WriteSeq() == 8 })
	var v tick
	for want := uint64(1); want <= 50; want++ {
		if err := c.Recv(&v, 5*time.Second); err != nil || v.Seq != want {
			t.Fatalf("record %d: got %d, %v", want, v.Seq, err)
		}
	}
	if err := <-done; err != nil || c.Lapped() != 0 {
		t.Fatalf("PushBatch: %v, lapped %d", err, c.Lapped())
	}
	if p.Writer().Stats().Backpressure == 0 {
		t.Error("a 50-record batch into an 8-slot ring never waited for the reader")
	}
}
