package shm

import "testing"

const bbBenchSlots = 64

// bbBenchSetup creates a blackboard with every key written and opens a
// separate reader on it.
func bbBenchSetup(b *testing.B) (*BlackboardWriter[bbQuote], *Blackboard[bbQuote]) {
	path := bbPath(b)
	w := bbCreate[bbQuote](b, path, bbBenchSlots)
	for k := range bbBenchSlots {
		w.Write(k, &bbQuote{Bid: uint64(k), Ask: uint64(k)})
	}
	return w, bbOpen[bbQuote](b, path)
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

// BenchmarkBlackboardReadParallel: GOMAXPROCS goroutines reading through
// one shared Blackboard handle, no writer.
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
