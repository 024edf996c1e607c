package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	if err != nil {
		t.Fatalf("CreateBlackboard: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func bbOpen[T any](t testing.TB, path string) *Blackboard[T] {
	t.Helper()
	b, err := OpenBlackboard[T](path)
	if err != nil {
		t.Fatalf("OpenBlackboard: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
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

// bbPoke overwrites n (4 or 8) little-endian bytes of the file at off,
// through the file (the page cache is shared with every mapping).
func bbPoke(t *testing.T, path string, off int64, n int, val uint64) {
	t.Helper()
	if err := bbWriteWord(path, off, n, val); err != nil {
		t.Fatal(err)
	}
}

func bbWriteWord(path string, off int64, n int, val uint64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], val)
	_, err = f.WriteAt(b[:n], off)
	return err
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

// The fixture was written by the reference implementation's Python producer.
func TestBlackboardForeignFixture(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "fixtures")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("fixtures directory %s missing: %v", dir, err)
	}
	fixture, err := os.ReadFile(filepath.Join(dir, "bb-py-8x16.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fixture) != 640 {
		t.Fatalf("fixture is %d bytes, want 640", len(fixture))
	}
	path := bbPath(t)
	if err := os.WriteFile(path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	b := bbOpen[bbQuote](t, path)
	if b.Slots() != 8 {
		t.Fatalf("Slots = %d, want 8", b.Slots())
	}
	want := map[int]bbQuote{0: {1000, 2000}, 1: {1001, 2001}, 2: {1102, 2102}, 3: {1003, 2003}}
	for k := range 8 {
		v, written := want[k]
		bbWant(t, b, k, written, v)
	}
	for k, seq := range []uint64{2, 2, 4, 2, 0, 0, 0, 0} {
		if got := binary.LittleEndian.Uint64(fixture[128+64*k:]); got != seq {
			t.Errorf("seqlock word of key %d = %d, want %d", k, got, seq)
		}
	}

	// Our writer, given the same writes, produces the very same bytes.
	ours := bbPath(t)
	w := bbCreate[bbQuote](t, ours, 8)
	for k := range 4 {
		w.Write(k, &bbQuote{Bid: uint64(1000 + k), Ask: uint64(2000 + k)})
	}
	w.Write(2, &bbQuote{Bid: 1102, Ask: 2102})
	got, err := os.ReadFile(ours)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fixture) {
		t.Errorf("our blackboard differs from the fixture:\nours    %x\nfixture %x", got, fixture)
	}
}

func TestBlackboardLayout(t *testing.T) {
	path := bbPath(t)
	w := bbCreate[bbWide](t, path, 5)
	var v bbWide
	for i := range v.A {
		v.A[i] = 0x0101010101010101 * uint64(i+1)
	}
	bbIs(t, w.Write(3, &v), nil, "Write")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Expected file: header, then 5 slots of round_up(8 + 72, 64) = 128
	// bytes, all zero but slot 3 (seqlock word 2 after one write, value).
	le := binary.LittleEndian
	want := make([]byte, 128+5*128)
	copy(want[0:8], "ROBBGNIR") // magic 0x5249_4E47_4242_4F52, little-endian
	le.PutUint32(want[8:], 1)   // version
	le.PutUint32(want[12:], 72) // value_size
	le.PutUint32(want[16:], 128)
	le.PutUint32(want[20:], 5) // slot_count
	le.PutUint64(want[128+3*128:], 2)
	for i, x := range v.A {
		le.PutUint64(want[128+3*128+8+8*i:], x)
	}
	if !bytes.Equal(raw, want) {
		t.Errorf("file bytes differ (%d bytes, want %d):\ngot  %x\nwant %x", len(raw), len(want), raw, want)
	}
}

func TestBlackboardCorruptFiles(t *testing.T) {
	cases := []struct {
		name  string
		off   int64 // header word to overwrite, or (n == 0) size to truncate to
		n     int   // size of the word: 4 or 8
		val   uint64
		want  error
		field string
	}{
		{"magic", 0, 8, 0x4552_4946_474E_4952, ErrMagic, "magic"}, // a ring's magic
		{"magic zero", 0, 8, 0, ErrMagic, "magic"},
		{"version", 8, 4, 2, ErrVersion, "version"},
		{"value_size", 12, 4, 24, ErrType, "value_size"},
		{"slot_size", 16, 4, 128, ErrCorrupt, "slot_size"},
		{"slot_count zero", 20, 4, 0, ErrCorrupt, "slot_count"},
		{"slot_count too big", 20, 4, 9, ErrTruncated, "slot_count"},
		{"slot_count huge", 20, 4, 0xFFFF_FFFF, ErrTruncated, "slot_count"},
		{"truncated slots", 128 + 3*64, 0, 0, ErrTruncated, "slot_count"},
		{"truncated header", 100, 0, 0, ErrTruncated, "file size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := bbPath(t)
			bbIs(t, bbTry[bbQuote](path, 8, false), nil, "CreateBlackboard")
			if c.n == 0 {
				bbIs(t, os.Truncate(path, c.off), nil, "Truncate")
			} else {
				bbPoke(t, path, c.off, c.n, c.val)
			}
			b, err := OpenBlackboard[bbQuote](path)
			if err == nil {
				b.Close()
				t.Fatalf("OpenBlackboard accepted a file with a bad %s", c.field)
			}
			bbCheckFieldErr(t, err, c.want, c.field)
		})
	}
	t.Run("reader type size", func(t *testing.T) {
		path := bbPath(t)
		bbCreate[bbQuote](t, path, 8)
		_, err := OpenBlackboard[[3]uint64](path)
		bbCheckFieldErr(t, err, ErrType, "value_size")
	})
}

func bbCheckFieldErr(t *testing.T, err, want error, field string) {
	t.Helper()
	t.Log(err)
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("err = %v, want a FieldError for field %q", err, field)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("message %q does not name the field %q", err, field)
	}
}

func TestBlackboardStalledWriter(t *testing.T) {
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 8)
	w.Write(3, &bbQuote{5, 5})
	b := bbOpen[bbQuote](t, path)
	// A writer that died between the two seqlock updates.
	bbPoke(t, path, 128+3*64, 8, 3)
	start := time.Now()
	var q bbQuote
	ok, err := b.Read(3, &q)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrStalledWriter) || ok {
		t.Fatalf("Read = %v, %v; want ErrStalledWriter", ok, err)
	}
	if !strings.Contains(err.Error(), "key 3") {
		t.Errorf("message %q does not name the key", err)
	}
	if elapsed < StallTimeout || elapsed > 20*StallTimeout {
		t.Errorf("stall reported after %v, want just over %v", elapsed, StallTimeout)
	}
	bbWant(t, b, 4, false, bbQuote{}) // other keys are unaffected

	// A write that finishes within the timeout is waited for, not reported.
	bbPoke(t, path, 128+3*64+8, 8, 9)
	bbPoke(t, path, 128+3*64+16, 8, 9)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(StallTimeout / 4)
		if err := bbWriteWord(path, 128+3*64, 8, 4); err != nil {
			t.Error(err)
		}
	}()
	bbWant(t, b, 3, true, bbQuote{9, 9})
	<-done
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
