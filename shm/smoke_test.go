package shm

import (
	"path/filepath"
	"testing"
)

type tick struct {
	Seq   uint64
	Value uint64
	Text  [40]byte
}

func TestSmokeFixed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	p, err := NewProducer[tick](path, ProducerOptions{Capacity: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := NewConsumer[tick](path, ReadOptions{Start: StartOldest})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := uint64(1); i <= 20; i++ {
		v := tick{Seq: i, Value: 3 * i}
		if s, err := p.Push(&v); err != nil || s != i {
			t.Fatalf("push %d: %d %v", i, s, err)
		}
	}
	var got []uint64
	var v tick
	for c.TryRecv(&v) {
		if v.Value != 3*v.Seq || v.Seq != c.Seq() {
			t.Fatalf("bad record %+v at %d", v, c.Seq())
		}
		got = append(got, v.Seq)
	}
	if len(got) != 16 || got[0] != 5 || c.Lapped() != 4 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
}
