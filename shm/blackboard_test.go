package shm

// Blackboard API tests: round trips, invalid keys and closed handles,
// concurrent readers that must never see a torn value, geometry checks and
// the writer lock, and allocation-free reads and writes. The file format
// (foreign fixture, layout, corrupt files, stalled writer) is in
// bbfile_test.go.

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bbQuote is the 16-byte value of the foreign fixture: bid u64 @0, ask u64 @8.
type bbQuote struct{ Bid, Ask uint64 }

// bbWide is 72 bytes: its slot rounds up to 128.
type bbWide struct{ A [9]uint64 }

func bbPath(t testing.TB) string { return filepath.Join(t.TempDir(), "bb.bin") }

func bbCreate[T any](t testing.TB, path string, slots int) *BlackboardWriter[T] {
	t.Helper()
	w, err := CreateBlackboard[T](path, slots, BlackboardOptions{})
	return closeAtEnd(t, w, err)
}

func bbOpen[T any](t testing.TB, path string) *Blackboard[T] {
	t.Helper()
	b, err := OpenBlackboard[T](path)
	return closeAtEnd(t, b, err)
}

// bbWant reads key and checks ok, no error and the value (the zero value,
// untouched, when the key was never written).
func bbWant(t *testing.T, b *Blackboard[bbQuote], key int, wantOK bool, want bbQuote) {
	t.Helper()
	var q bbQuote
	if ok, err := b.Read(key, &q); ok != wantOK || err != nil || q != want {
		t.Errorf("Read(%d) = %v, %v, %+v; want %v, <nil>, %+v", key, ok, err, q, wantOK, want)
	}
}

// bbTry creates a blackboard at path and closes its writer at once.
func bbTry[T any](path string, slots int, replace bool) error {
	w, err := CreateBlackboard[T](path, slots, BlackboardOptions{Replace: replace})
	if err == nil {
		w.Close()
	}
	return err
}

// bbIs fails the test unless err wraps want (want nil: unless err is nil).
func bbIs(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", what, err, want)
	}
}

func TestBlackboardRoundTrip(t *testing.T) {
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 8)
	b := bbOpen[bbQuote](t, path)
	if w.Slots() != 8 || b.Slots() != 8 {
		t.Fatalf("Slots = %d, %d; want 8", w.Slots(), b.Slots())
	}
	for k := 0; k < 8; k += 2 {
		if err := w.Write(k, &bbQuote{Bid: uint64(100 + k), Ask: uint64(200 + k)}); err != nil {
			t.Fatalf("Write(%d): %v", k, err)
		}
	}
	for k := range 8 {
		if k%2 == 0 {
			bbWant(t, b, k, true, bbQuote{uint64(100 + k), uint64(200 + k)})
		} else {
			bbWant(t, b, k, false, bbQuote{}) // never written
		}
	}
	// Overwrite, then the writer goes away: the last value stays readable.
	bbIs(t, w.Write(2, &bbQuote{Bid: 7, Ask: 8}), nil, "Write")
	bbIs(t, w.Close(), nil, "w.Close()")
	bbWant(t, b, 2, true, bbQuote{7, 8})
}

func TestBlackboardInvalidAndClosed(t *testing.T) {
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 4)
	b := bbOpen[bbQuote](t, path)
	var q bbQuote
	for _, k := range []int{-1, 4, 1 << 40} {
		bbIs(t, w.Write(k, &q), ErrInvalid, "Write out of range")
		_, err := b.Read(k, &q)
		bbIs(t, err, ErrInvalid, "Read out of range")
	}
	bbIs(t, w.Write(0, nil), ErrInvalid, "Write(nil)")
	_, err := b.Read(0, nil)
	bbIs(t, err, ErrInvalid, "Read(nil)")
	bbIs(t, bbTry[bbQuote](bbPath(t), 0, false), ErrInvalid, "CreateBlackboard with 0 slots")
	bbIs(t, bbTry[bbQuote](bbPath(t), -3, false), ErrInvalid, "CreateBlackboard with -3 slots")
	bbIs(t, bbTry[struct{ S string }](bbPath(t), 1, false), ErrType, "CreateBlackboard with a string field")
	_, err = OpenBlackboard[*int](path)
	bbIs(t, err, ErrType, "OpenBlackboard[*int]")

	bbIs(t, b.Close(), nil, "b.Close()")
	bbIs(t, w.Close(), nil, "w.Close()")
	_, err = b.Read(0, &q)
	bbIs(t, err, ErrClosed, "Read after Close")
	bbIs(t, b.Close(), ErrClosed, "second Close")
	bbIs(t, w.Write(0, &q), ErrClosed, "Write after Close")
	bbIs(t, w.Close(), ErrClosed, "second writer Close")
}

func TestBlackboardConcurrentNoTear(t *testing.T) {
	const writes, limit = 300_000, 10 * time.Second
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 4)
	b := bbOpen[bbQuote](t, path) // a reader handle of its own, shared by both readers
	var stop atomic.Bool
	var hits atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			var q bbQuote
			for last := uint64(0); !stop.Load(); last = q.Bid {
				ok, err := b.Read(1, &q)
				if err != nil || ok && (q.Bid != q.Ask || q.Bid < last) {
					t.Errorf("Read = %v, %v, %+v after bid %d: torn or out of order", ok, err, q, last)
					return
				}
				if ok {
					hits.Add(1)
				}
			}
		})
	}
	deadline := time.Now().Add(limit)
	n := uint64(0)
	for n < writes && !t.Failed() && (n%4096 != 0 || time.Now().Before(deadline)) {
		n++
		if err := w.Write(1, &bbQuote{Bid: n, Ask: n}); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d writes, %d reads with a value", n, hits.Load())
	if hits.Load() == 0 && !t.Failed() {
		t.Errorf("readers never saw a value")
	}
}

func TestBlackboardGeometryAndLock(t *testing.T) {
	path := bbPath(t)
	w, err := CreateBlackboard[bbQuote](path, 8, BlackboardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bbIs(t, bbTry[bbQuote](path, 8, true), ErrLocked, "second live writer")
	w.Write(0, &bbQuote{1, 2})
	w.Close()

	bbIs(t, bbTry[bbQuote](path, 4, false), ErrGeometry, "other slot_count")
	bbIs(t, bbTry[[3]uint64](path, 8, false), ErrGeometry, "other value_size")
	// Refusals leave the old blackboard intact.
	old := bbOpen[bbQuote](t, path)
	bbWant(t, old, 0, true, bbQuote{1, 2})

	// Same geometry: replaced by a fresh, empty inode without asking.
	w2 := bbCreate[bbQuote](t, path, 8)
	w2.Write(0, &bbQuote{3, 4})
	bbWant(t, old, 0, true, bbQuote{1, 2}) // the old mapping keeps the old inode
	bbWant(t, bbOpen[bbQuote](t, path), 0, true, bbQuote{3, 4})
	w2.Close()

	// Other geometry with Replace.
	bbIs(t, bbTry[[3]uint64](path, 2, true), nil, "Replace with another geometry")
	if b := bbOpen[[3]uint64](t, path); b.Slots() != 2 {
		t.Errorf("replaced blackboard has %d slots, want 2", b.Slots())
	}

	// A file that is not a blackboard at all.
	other := bbPath(t)
	if err := os.WriteFile(other, []byte("not a blackboard"), 0o600); err != nil {
		t.Fatal(err)
	}
	bbIs(t, bbTry[bbQuote](other, 8, false), ErrGeometry, "over a foreign file")
	bbIs(t, bbTry[bbQuote](other, 8, true), nil, "Replace over a foreign file")
}

func TestBlackboardAllocs(t *testing.T) {
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 8)
	b := bbOpen[bbQuote](t, path)
	q := &bbQuote{1, 1}
	if n := testing.AllocsPerRun(1000, func() { w.Write(2, q) }); n != 0 {
		t.Errorf("Write allocates %v times", n)
	}
	var got bbQuote
	if n := testing.AllocsPerRun(1000, func() { b.Read(2, &got) }); n != 0 {
		t.Errorf("Read allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { b.Read(5, &got) }); n != 0 {
		t.Errorf("Read of a never-written key allocates %v times", n)
	}
}
