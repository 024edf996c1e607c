package bench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

// TestMirrorVerify: the zero-loss check of a mirror ring passes on records
// as the producer wrote them, skips what the ring overwrote since, and
// names a record whose bytes or sequence are wrong.
func TestMirrorVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: 64}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	m := &mirrorEnd{rd: rd}
	rec := make([]byte, 64)
	push := func(fill func(seq uint64)) uint64 {
		seq := w.Next()
		fill(seq)
		if _, err := w.Push(rec); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	good := func(seq uint64) { synth.Fill(rec, seq, 7) }
	for range 100 { // 36 records overwritten by the last 64
		push(good)
	}
	if err := m.verify(1, 100); err != nil {
		t.Fatalf("verify of records as written: %v", err)
	}
	bad := push(func(seq uint64) { synth.Fill(rec, seq, 7); rec[40] ^= 1 })
	if err := m.verify(1, bad); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("verify of a flipped byte: %v, want a checksum error", err)
	}
	wrong := push(func(seq uint64) { synth.Fill(rec, seq+1, 7) })
	if err := m.verify(wrong, wrong); err == nil || !strings.Contains(err.Error(), "holds record") {
		t.Fatalf("verify of a record with another's sequence: %v, want a sequence error", err)
	}
}
