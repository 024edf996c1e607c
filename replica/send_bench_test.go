package replica

import (
	"path/filepath"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// BenchmarkSendRange measures a session's sendRange, the path of a TCP
// stream's records (the writer's, and the hot threads' direct sends):
// 65,536 records of 56 bytes a ring holds, into DATA frames handed to a
// write that discards them. It allocates nothing.
func BenchmarkSendRange(b *testing.B) {
	const n = 1 << 16
	w, err := shm.Create(filepath.Join(b.TempDir(), "ring"), shm.RingConfig{PayloadSize: 56, Capacity: n}, shm.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	rec := make([]byte, 56)
	for range n {
		if _, err := w.Push(rec); err != nil {
			b.Fatal(err)
		}
	}
	ss := &session{srv: &Server{ring: w.Ring()}}
	f := newFeed(w.Ring())
	buf := make([]byte, 0, tcpFrameMax+16)
	discard := func([]byte, bool) error { return nil }
	b.SetBytes(n * 56)
	b.ReportAllocs()
	for b.Loop() {
		for seq := uint64(1); seq <= n; {
			buf, seq, err = ss.sendRange(f, buf, seq, n, false, discard)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
