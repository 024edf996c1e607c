package shm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// shmRingPath is a fresh ring path in /dev/shm (tmpfs, where rings live:
// a cut there frees the pages at once).
func shmRingPath(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ringfire-trunc-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "ring")
}

// wantFault checks that err is the fault of a ring cut under its mapping,
// naming path.
func wantFault(t *testing.T, err error, path string) {
	t.Helper()
	var fe *FaultError
	if !errors.As(err, &fe) || !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v, want a *FaultError wrapping ErrTruncated", err)
	}
	if fe.Path != path {
		t.Fatalf("the fault names %q, want %q (%v)", fe.Path, path, err)
	}
	t.Logf("%v", err)
}

// truncatedRing makes a 4096-slot ring of 64-byte records at a fresh
// path in /dev/shm, with 100 records, and returns its writer.
func truncatedRing(t *testing.T) (*Writer, string) {
	t.Helper()
	path := shmRingPath(t)
	w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 4096}, CreateOptions{})
	w = closeAtEnd(t, w, err)
	rec := make([]byte, 56)
	for range 100 {
		if _, err := w.Push(rec); err != nil {
			t.Fatal(err)
		}
	}
	return w, path
}

// TestTruncatedToZero: every access to a ring whose file was cut to 0
// bytes — a reader's receive, a writer's push, a futex wait, the header —
// is an error naming the file, in the goroutine that touched it, and the
// process lives on. Before the fault guard each of them killed the test
// binary with SIGBUS.
func TestTruncatedToZero(t *testing.T) {
	w, path := truncatedRing(t)
	rd := unregisteredReader(t, path, ReadOptions{Start: StartOldest})
	notify := openRing(t, path, OpenOptions{Notify: true})
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 56)
	cases := map[string]func() error{
		"Reader.Recv": func() error { _, err := rd.Recv(buf, time.Second); return err },
		"Writer.Push": func() error { _, err := w.Push(buf); return err },
		"Ring.Await":  func() error { notify.Await(1<<40, FutexWait(0), 50*time.Millisecond); return nil },
		"Ring.Header": func() error { _, err := notify.Header(); return err },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) { wantFault(t, Protect(f), path) })
	}
}

// TestTruncatedToHalf: a ring cut to half keeps its header; reading or
// writing a slot in the lost half is the error, one in the kept half
// still works.
func TestTruncatedToHalf(t *testing.T) {
	w, path := truncatedRing(t)
	l := w.Ring().Layout()
	if err := os.Truncate(path, int64(l.FileSize()/2)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 56)
	if err := Protect(func() error { _, err := w.Ring().ReadSlot(1, buf); return err }); err != nil {
		t.Fatalf("slot 1, in the kept half: %v", err)
	}
	err := Protect(func() error { _, err := w.Ring().ReadSlot(l.Capacity-1, buf); return err })
	wantFault(t, err, path)
	err = Protect(func() error { return w.Store(l.Capacity-2, buf) })
	wantFault(t, err, path)
	if _, err := Open(path, OpenOptions{}); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Open of the cut ring: %v, want ErrTruncated", err)
	}
}

// TestTruncatedParked: a ParkWait receive parked on a ring that is then
// cut ends with the error; the park hub (a goroutine of the process, which
// sleeps on every parked word) lives on and still wakes receives of other
// rings.
func TestTruncatedParked(t *testing.T) {
	_, path := truncatedRing(t)
	ws := ParkWait(0)
	rd := unregisteredReader(t, path, ReadOptions{Start: StartHead, Wait: &ws})
	rd.r.mapNotify()
	errc := make(chan error, 1)
	go func() {
		errc <- Protect(func() error { _, err := rd.Recv(make([]byte, 56), 10*time.Second); return err })
	}()
	testenv.Until(t, 5*time.Second, "the receive to park", func() bool { return rd.r.waiting.Load() > 0 })
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		wantFault(t, err, path)
	case <-time.After(5 * time.Second):
		t.Fatal("the parked receive did not end within 5 s of the cut")
	}
	// The hub still serves another ring.
	w2, path2 := truncatedRing(t)
	rd2 := unregisteredReader(t, path2, ReadOptions{Start: StartHead, Wait: &ws})
	rd2.r.mapNotify()
	got := make(chan error, 1)
	go func() { _, err := rd2.Recv(make([]byte, 56), 5*time.Second); got <- err }()
	testenv.Until(t, 5*time.Second, "the second receive to park", func() bool { return rd2.r.waiting.Load() > 0 })
	if _, err := w2.Push(make([]byte, 56)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("a parked receive of another ring after the cut: %v", err)
	}
}

// TestFaultElsewhere: Recover hands on a panic that is no fault of a
// mapping.
func TestFaultElsewhere(t *testing.T) {
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Fatalf("recovered %v, want the panic passed on", r)
		}
	}()
	Protect(func() error { panic("not a fault") })
}

// TestTruncatedClosedFirst: a guarded function whose deferred Close
// unmaps the cut ring before the fault reaches Recover (a producer's
// defer w.Close()) still gets the error naming the file.
func TestTruncatedClosedFirst(t *testing.T) {
	path := shmRingPath(t)
	err := Protect(func() error {
		w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 4096}, CreateOptions{})
		if err != nil {
			return err
		}
		defer w.Close()
		if err := os.Truncate(path, 0); err != nil {
			return err
		}
		_, err = w.Push(make([]byte, 56))
		return err
	})
	wantFault(t, err, path)
}
