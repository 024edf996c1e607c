package shm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringfire/ringfire/internal/testenv"
)

// shmDir is a fresh directory under /dev/shm, removed when tb ends: the
// tmpfs rings live on in production.
func shmDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "rfstale")
	if err != nil {
		testenv.Skipf(tb, "no /dev/shm to test in: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestStaleRingHeldByProducer(t *testing.T) {
	dir := shmDir(t)
	single := filepath.Join(dir, "single")
	w, err := Create(single, RingConfig{PayloadSize: 56, Capacity: 8}, CreateOptions{})
	w = closeAtEnd(t, w, err)
	multi := filepath.Join(dir, "multi")
	mw, err := CreateMPMC(multi, RingConfig{PayloadSize: 56, Capacity: 8}, CreateOptions{})
	closeAtEnd(t, mw, err)
	for _, p := range []string{single, multi} {
		if s, err := OpenStaleRing(p); !errors.Is(err, ErrLocked) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s with a live producer: %v, want ErrLocked", filepath.Base(p), err)
		}
	}
	// The producer's lock goes with it.
	w.Close()
	s, err := OpenStaleRing(single)
	if err != nil {
		t.Fatalf("ring of a closed producer: %v", err)
	}
	s.Close()
}

// A stale ring held by OpenStaleRing keeps a new producer off the path
// until it is removed; the producer then creates a fresh ring.
func TestStaleRingRemove(t *testing.T) {
	path := filepath.Join(shmDir(t), "ring")
	w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 8}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	s, err := OpenStaleRing(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 8}, CreateOptions{}); !errors.Is(err, ErrLocked) {
		if w != nil {
			w.Close()
		}
		t.Fatalf("producer over a ring being cleaned: %v, want ErrLocked", err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	if err := s.Remove(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("second Remove: %v", err)
	}
	w, err = Create(path, RingConfig{PayloadSize: 56, Capacity: 8}, CreateOptions{})
	if err != nil {
		t.Fatalf("producer after Remove: %v", err)
	}
	w.Close()
}

// Remove leaves a file that replaced the stale ring at its path.
func TestStaleRingRemoveReplaced(t *testing.T) {
	dir := shmDir(t)
	path, other := filepath.Join(dir, "ring"), filepath.Join(dir, "other")
	for _, p := range []string{path, other} {
		w, err := Create(p, RingConfig{PayloadSize: 56, Capacity: 8}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	s, err := OpenStaleRing(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(); !errors.Is(err, ErrLocked) {
		t.Fatalf("Remove of a replaced path: %v, want ErrLocked", err)
	}
	if _, err := Open(path, OpenOptions{}); err != nil {
		t.Fatalf("the file that replaced the ring: %v", err)
	}
}

func TestStaleRingReaders(t *testing.T) {
	path := filepath.Join(shmDir(t), "ring")
	p, err := NewProducer[tick](path, ProducerOptions{Capacity: 8, Lossless: true, Readers: 4})
	if err != nil {
		t.Fatal(err)
	}
	consumer[tick](t, path, ReadOptions{Name: "live"})
	p.Close()
	plantReader(t, path, 2, deadPID(t), 1)
	s, err := OpenStaleRing(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := s.Readers()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || !rs[0].Alive || rs[0].PID != uint32(os.Getpid()) || rs[0].Name != "live" || rs[1].Alive {
		t.Fatalf("readers %+v", rs)
	}
}

func TestStaleRingNotARing(t *testing.T) {
	dir := shmDir(t)
	zeros, short := filepath.Join(dir, "zeros"), filepath.Join(dir, "short")
	if err := os.WriteFile(zeros, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]error{zeros: ErrMagic, short: ErrTruncated, dir: ErrNotRegular} {
		if s, err := OpenStaleRing(p); !errors.Is(err, want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want %v", p, err, want)
		}
	}
	if _, err := os.Stat(zeros); err != nil {
		t.Fatal(err)
	}
}
