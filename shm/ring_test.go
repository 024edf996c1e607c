package shm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStartModes(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 16})
	pushTicks(t, p, 1, 20)
	cases := []struct {
		name   string
		opts   ReadOptions
		want   []uint64
		lapped uint64
	}{
		{"oldest", ReadOptions{Start: StartOldest}, seqs(5, 20), 0},
		{"latest", ReadOptions{Start: StartLatest}, seqs(20, 20), 0},
		{"head", ReadOptions{Start: StartHead}, nil, 0},
		{"sequence 12", ReadOptions{Start: StartSequence, Sequence: 12}, seqs(12, 20), 0},
		{"sequence 1 clamped", ReadOptions{Start: StartSequence, Sequence: 1}, seqs(5, 20), 4},
		{"sequence ahead", ReadOptions{Start: StartSequence, Sequence: 25}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := consumer[tick](t, path, tc.opts)
			if got := drain(t, c); !slices.Equal(got, tc.want) || c.Lapped() != tc.lapped {
				t.Fatalf("got %v lapped %d, want %v lapped %d", got, c.Lapped(), tc.want, tc.lapped)
			}
		})
	}
	head := consumer[tick](t, path, ReadOptions{Start: StartHead})
	pushTicks(t, p, 21, 22)
	if got := drain(t, head); !slices.Equal(got, seqs(21, 22)) {
		t.Fatalf("head reader got %v", got)
	}
}

func TestLatestOnEmptyRing(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8})
	c := consumer[tick](t, path, ReadOptions{Start: StartLatest})
	if got := drain(t, c); got != nil {
		t.Fatalf("empty ring returned %v", got)
	}
	pushTicks(t, p, 1, 3)
	if got := drain(t, c); !slices.Equal(got, seqs(1, 3)) {
		t.Fatalf("got %v", got)
	}
}

func TestLappedReaderJumpsToOldest(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8})
	c := consumer[tick](t, path, ReadOptions{Start: StartOldest})
	pushTicks(t, p, 1, 3)
	if got := drain(t, c); !slices.Equal(got, seqs(1, 3)) {
		t.Fatalf("got %v", got)
	}
	pushTicks(t, p, 4, 30) // laps the reader: 4..22 are gone
	if got := drain(t, c); !slices.Equal(got, seqs(23, 30)) || c.Lapped() != 19 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
}

func TestCheckpointResume(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 16})
	off := filepath.Join(t.TempDir(), "worker.offset")
	pushTicks(t, p, 1, 10)
	c, err := NewConsumer[tick](path, ReadOptions{Start: StartOldest, OffsetFile: off, Name: "worker1"})
	if err != nil {
		t.Fatal(err)
	}
	var v tick
	for range 6 {
		if !c.TryRecv(&v) {
			t.Fatal("no record")
		}
	}
	if err := c.CommitOffset(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if last, at, err := ReadCheckpoint(off); err != nil || last != 6 || time.Since(at) > time.Minute {
		t.Fatalf("checkpoint: last %d at %v, %v", last, at, err)
	}
	raw, _ := os.ReadFile(off)
	if len(raw) != CheckpointSize || string(raw[32:39]) != "worker1" || string(raw[0:8]) != "SFFO_MHS" {
		t.Fatalf("checkpoint bytes %q", raw)
	}
	// Resume continues after the commit, whatever the start mode says.
	c2 := consumer[tick](t, path, ReadOptions{Start: StartLatest, OffsetFile: off})
	if got := drain(t, c2); !slices.Equal(got, seqs(7, 10)) {
		t.Fatalf("resumed reader got %v", got)
	}
	// A commit older than the oldest retained record is clamped and counted.
	if err := c2.CommitOffset(); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	pushTicks(t, p, 11, 40)
	c3 := consumer[tick](t, path, ReadOptions{OffsetFile: off})
	if got := drain(t, c3); !slices.Equal(got, seqs(25, 40)) || c3.Lapped() != 14 {
		t.Fatalf("clamped resume got %v lapped %d", got, c3.Lapped())
	}
}

func TestCheckpointRefusesForeignFile(t *testing.T) {
	_, path := newTickRing(t, ProducerOptions{Capacity: 8})
	off := filepath.Join(t.TempDir(), "bad.offset")
	os.WriteFile(off, make([]byte, 64), 0o644)
	_, err := NewConsumer[tick](path, ReadOptions{OffsetFile: off})
	if !errors.Is(err, ErrMagic) || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("err = %v", err)
	}
	c := consumer[tick](t, path, ReadOptions{})
	if err := c.CommitOffset(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("commit without offset file: %v", err)
	}
}

func TestSparseRingSkipsHoles(t *testing.T) {
	w, path := createRing(t, RingConfig{PayloadSize: 56, Capacity: 16, Flags: FlagSparse})
	c := consumer[tick](t, path, ReadOptions{Start: StartHead})
	store := func(seqs ...uint64) {
		for _, s := range seqs {
			v := tick{Seq: s, Value: 3 * s}
			if err := w.Store(s, bytesOf(&v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Publish(seqs[len(seqs)-1]); err != nil {
			t.Fatal(err)
		}
	}
	store(1, 2, 5, 6) // 3, 4 never come
	if got := drain(t, c); !slices.Equal(got, []uint64{1, 2, 5, 6}) || c.Lapped() != 2 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
	store(30, 31) // a gap wider than the ring: 7..29 are holes
	if got := drain(t, c); !slices.Equal(got, []uint64{30, 31}) || c.Lapped() != 25 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
	store(40)
	if err := w.Store(39, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("out-of-order store: %v", err)
	}
	if got := drain(t, c); !slices.Equal(got, []uint64{40}) || c.Lapped() != 33 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
	r := c.Reader().Ring()
	var buf [56]byte
	for seq, want := range map[uint64]SlotState{40: SlotReady, 35: SlotHole, 41: SlotNotYet, 24: SlotOverwritten} {
		if st, err := r.ReadSlot(seq, buf[:]); err != nil || st != want {
			t.Errorf("ReadSlot(%d) = %v, %v; want %v", seq, st, err, want)
		}
	}
}

func TestNonSparseRingWaitsInsteadOfSkipping(t *testing.T) {
	w, path := createRing(t, RingConfig{PayloadSize: 56, Capacity: 16})
	c := consumer[tick](t, path, ReadOptions{Start: StartHead})
	v := tick{Seq: 3}
	w.Store(3, bytesOf(&v))
	w.Publish(3)
	if got := drain(t, c); got != nil {
		t.Fatalf("non-sparse reader skipped a hole: %v", got)
	}
}

func TestRawSlotAPI(t *testing.T) {
	w, path := createRing(t, RingConfig{PayloadSize: 24, Capacity: 4})
	if w.Ring().Layout().ElementSize != 32 || w.Ring().Layout().PayloadSize() != 24 {
		t.Fatalf("layout %+v", w.Ring().Layout())
	}
	for i := range 6 {
		if _, err := w.Push([]byte{byte(i + 1), 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Push(make([]byte, 25)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized push: %v", err)
	}
	r := openRing(t, path, OpenOptions{})
	buf := make([]byte, 24)
	if st, _ := r.ReadSlot(5, buf); st != SlotReady || buf[0] != 5 || buf[3] != 0 {
		t.Fatalf("slot 5: %v %v", st, buf)
	}
	if st, _ := r.ReadSlot(1, buf); st != SlotOverwritten {
		t.Fatalf("slot 1: %v", st)
	}
	if _, err := r.ReadSlot(0, buf); !errors.Is(err, ErrInvalid) {
		t.Fatalf("slot 0: %v", err)
	}
	if err := w.Store(100, make([]byte, 25)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized store: %v", err)
	}
	if err := w.Publish(200); !errors.Is(err, ErrInvalid) {
		t.Fatalf("publish ahead of store: %v", err)
	}
}
