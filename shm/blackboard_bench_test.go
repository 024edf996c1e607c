package shm

import (
	"path/filepath"
	"testing"
)

const bbBenchSlots = 64

func bbBenchSetup(b *testing.B) (*BlackboardWriter[bbQuote], *Blackboard[bbQuote]) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bb.bin")
	w, err := CreateBlackboard[bbQuote](path, bbBenchSlots, BlackboardOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	for k := range bbBenchSlots {
		w.Write(k, &bbQuote{Bid: uint64(k), Ask: uint64(k)})
	}
	r, err := OpenBlackboard[bbQuote](path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return w, r
}

// BenchmarkBlackboardRead: one uncontended 16-byte read, warm cache.
func BenchmarkBlackboardRead(b *testing.B) {
	_, r := bbBenchSetup(b)
	var q bbQuote
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		if ok, err := r.Read(k, &q); !ok || err != nil {
			b.Fatalf("Read(%d) = %v, %v", k, ok, err)
		}
		k = (k + 1) & (bbBenchSlots - 1)
	}
}

// BenchmarkBlackboardWrite: one 16-byte write, no reader.
func BenchmarkBlackboardWrite(b *testing.B) {
	w, _ := bbBenchSetup(b)
	q := bbQuote{Bid: 1, Ask: 1}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		q.Bid++
		q.Ask++
		if err := w.Write(k, &q); err != nil {
			b.Fatal(err)
		}
		k = (k + 1) & (bbBenchSlots - 1)
	}
}

// BenchmarkBlackboardReadParallel: GOMAXPROCS goroutines reading one
// shared Blackboard handle (no writer).
func BenchmarkBlackboardReadParallel(b *testing.B) {
	_, r := bbBenchSetup(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var q bbQuote
		k := 0
		for pb.Next() {
			r.Read(k, &q)
			k = (k + 1) & (bbBenchSlots - 1)
		}
	})
}
