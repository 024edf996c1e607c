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
type bbWide struct {
	A [9]uint64
}

func bbPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "bb.bin")
}

func bbCreate[T any](t *testing.T, path string, slots int) *BlackboardWriter[T] {
	t.Helper()
	w, err := CreateBlackboard[T](path, slots, BlackboardOptions{})
	if err != nil {
		t.Fatalf("CreateBlackboard: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func bbOpen[T any](t *testing.T, path string) *Blackboard[T] {
	t.Helper()
	b, err := OpenBlackboard[T](path)
	if err != nil {
		t.Fatalf("OpenBlackboard: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
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
	for k := range 8 {
		if k%2 == 0 {
			if err := w.Write(k, &bbQuote{Bid: uint64(100 + k), Ask: uint64(200 + k)}); err != nil {
				t.Fatalf("Write(%d): %v", k, err)
			}
		}
	}
	for k := range 8 {
		var q bbQuote
		ok, err := b.Read(k, &q)
		if err != nil {
			t.Fatalf("Read(%d): %v", k, err)
		}
		if want := k%2 == 0; ok != want {
			t.Fatalf("Read(%d) ok = %v, want %v", k, ok, want)
		}
		if ok && (q.Bid != uint64(100+k) || q.Ask != uint64(200+k)) {
			t.Fatalf("Read(%d) = %+v", k, q)
		}
		if !ok && q != (bbQuote{}) {
			t.Fatalf("Read(%d) of a never-written key touched the value: %+v", k, q)
		}
	}
	// Overwrite, then the writer goes away: the last value stays readable.
	if err := w.Write(2, &bbQuote{Bid: 7, Ask: 8}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("writer Close: %v", err)
	}
	var q bbQuote
	if ok, err := b.Read(2, &q); !ok || err != nil || q != (bbQuote{7, 8}) {
		t.Fatalf("Read(2) after writer Close = %v, %v, %+v", ok, err, q)
	}
}

func TestBlackboardInvalidAndClosed(t *testing.T) {
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 4)
	b := bbOpen[bbQuote](t, path)
	var q bbQuote
	for _, k := range []int{-1, 4, 1 << 40} {
		if err := w.Write(k, &q); !errors.Is(err, ErrInvalid) {
			t.Errorf("Write(%d) = %v, want ErrInvalid", k, err)
		}
		if _, err := b.Read(k, &q); !errors.Is(err, ErrInvalid) {
			t.Errorf("Read(%d) = %v, want ErrInvalid", k, err)
		}
	}
	if err := w.Write(0, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Write(nil) = %v, want ErrInvalid", err)
	}
	if _, err := b.Read(0, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Read(nil) = %v, want ErrInvalid", err)
	}
	for _, n := range []int{0, -3} {
		if _, err := CreateBlackboard[bbQuote](bbPath(t), n, BlackboardOptions{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateBlackboard(slots=%d) = %v, want ErrInvalid", n, err)
		}
	}
	if _, err := CreateBlackboard[struct{ S string }](bbPath(t), 1, BlackboardOptions{}); !errors.Is(err, ErrType) {
		t.Errorf("CreateBlackboard with a string field = %v, want ErrType", err)
	}
	if _, err := OpenBlackboard[*int](path); !errors.Is(err, ErrType) {
		t.Errorf("OpenBlackboard[*int] = %v, want ErrType", err)
	}

	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("writer Close: %v", err)
	}
	if _, err := b.Read(0, &q); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	if err := b.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if err := w.Write(0, &q); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second writer Close = %v, want ErrClosed", err)
	}
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
		var q bbQuote
		ok, err := b.Read(k, &q)
		if err != nil {
			t.Fatalf("Read(%d): %v", k, err)
		}
		w, written := want[k]
		if ok != written || q != w {
			t.Errorf("Read(%d) = %v, %+v; want %v, %+v", k, ok, q, written, w)
		}
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
	if err := w.Write(3, &v); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(raw) != 128+5*128 {
		t.Fatalf("file size = %d, want %d", len(raw), 128+5*128)
	}
	if string(raw[0:8]) != "ROBBGNIR" || le.Uint64(raw[0:]) != 0x5249_4E47_4242_4F52 {
		t.Errorf("magic = % x", raw[0:8])
	}
	for _, f := range []struct {
		name      string
		off, want uint32
	}{{"version", 8, 1}, {"value_size", 12, 72}, {"slot_size", 16, 128}, {"slot_count", 20, 5}} {
		if got := le.Uint32(raw[f.off:]); got != f.want {
			t.Errorf("%s @%d = %d, want %d", f.name, f.off, got, f.want)
		}
	}
	if !bytes.Equal(raw[24:128], make([]byte, 104)) {
		t.Errorf("reserved header bytes not zero: % x", raw[24:128])
	}
	for k := range 5 {
		slot := raw[128+128*k : 128+128*(k+1)]
		wantSeq := uint64(0)
		wantVal := make([]byte, 72)
		if k == 3 {
			wantSeq = 2
			for i := range v.A {
				le.PutUint64(wantVal[8*i:], v.A[i])
			}
		}
		if got := le.Uint64(slot); got != wantSeq {
			t.Errorf("slot %d seqlock word = %d, want %d", k, got, wantSeq)
		}
		if !bytes.Equal(slot[8:80], wantVal) || !bytes.Equal(slot[80:], make([]byte, 48)) {
			t.Errorf("slot %d bytes = % x", k, slot)
		}
	}
}

func TestBlackboardCorruptFiles(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *testing.T, path string)
		want   error
		field  string
	}{
		{"magic", func(t *testing.T, p string) { bbPoke(t, p, 0, 8, 0x4552_4946_474E_4952) }, ErrMagic, "magic"},
		{"magic zero", func(t *testing.T, p string) { bbPoke(t, p, 0, 8, 0) }, ErrMagic, "magic"},
		{"version", func(t *testing.T, p string) { bbPoke(t, p, 8, 4, 2) }, ErrVersion, "version"},
		{"value_size", func(t *testing.T, p string) { bbPoke(t, p, 12, 4, 24) }, ErrType, "value_size"},
		{"slot_size", func(t *testing.T, p string) { bbPoke(t, p, 16, 4, 128) }, ErrCorrupt, "slot_size"},
		{"slot_count zero", func(t *testing.T, p string) { bbPoke(t, p, 20, 4, 0) }, ErrCorrupt, "slot_count"},
		{"slot_count too big", func(t *testing.T, p string) { bbPoke(t, p, 20, 4, 9) }, ErrTruncated, "slot_count"},
		{"slot_count huge", func(t *testing.T, p string) { bbPoke(t, p, 20, 4, 0xFFFF_FFFF) }, ErrTruncated, "slot_count"},
		{"truncated slots", func(t *testing.T, p string) { bbTruncate(t, p, 128+3*64) }, ErrTruncated, "slot_count"},
		{"truncated header", func(t *testing.T, p string) { bbTruncate(t, p, 100) }, ErrTruncated, "file size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := bbPath(t)
			w := bbCreate[bbQuote](t, path, 8)
			w.Write(1, &bbQuote{1, 1})
			w.Close()
			c.mutate(t, path)
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

func bbTruncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func bbCheckFieldErr(t *testing.T, err, want error, field string) {
	t.Helper()
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
	// Other keys are unaffected.
	if ok, err := b.Read(4, &q); ok || err != nil {
		t.Errorf("Read(4) = %v, %v", ok, err)
	}

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
	ok, err = b.Read(3, &q)
	<-done
	if !ok || err != nil || q != (bbQuote{9, 9}) {
		t.Errorf("Read after a slow write = %v, %v, %+v; want {9 9}", ok, err, q)
	}
}

func TestBlackboardConcurrentNoTear(t *testing.T) {
	const writes = 300_000
	limit := 10 * time.Second
	path := bbPath(t)
	w := bbCreate[bbQuote](t, path, 4)
	b := bbOpen[bbQuote](t, path)
	var stop atomic.Bool
	var reads, hits atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for !stop.Load() {
				var q bbQuote
				ok, err := b.Read(1, &q)
				reads.Add(1)
				if err != nil {
					t.Errorf("Read: %v", err)
					return
				}
				if !ok {
					continue
				}
				hits.Add(1)
				if q.Bid != q.Ask {
					t.Errorf("torn read: bid %d, ask %d", q.Bid, q.Ask)
					return
				}
				if q.Bid < last {
					t.Errorf("value went back from %d to %d", last, q.Bid)
					return
				}
				last = q.Bid
			}
		}()
	}
	deadline := time.Now().Add(limit)
	n := uint64(0)
	for n < writes && !t.Failed() {
		n++
		if err := w.Write(1, &bbQuote{Bid: n, Ask: n}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if n%4096 == 0 && time.Now().After(deadline) {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d writes, %d reads (%d with a value)", n, reads.Load(), hits.Load())
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
	if _, err := CreateBlackboard[bbQuote](path, 8, BlackboardOptions{Replace: true}); !errors.Is(err, ErrLocked) {
		t.Errorf("second writer = %v, want ErrLocked", err)
	}
	w.Write(0, &bbQuote{1, 2})
	w.Close()

	if _, err := CreateBlackboard[bbQuote](path, 4, BlackboardOptions{}); !errors.Is(err, ErrGeometry) {
		t.Errorf("other slot_count = %v, want ErrGeometry", err)
	}
	if _, err := CreateBlackboard[[3]uint64](path, 8, BlackboardOptions{}); !errors.Is(err, ErrGeometry) {
		t.Errorf("other value_size = %v, want ErrGeometry", err)
	}
	// Refusals leave the old blackboard intact.
	old := bbOpen[bbQuote](t, path)
	var q bbQuote
	if ok, err := old.Read(0, &q); !ok || err != nil || q != (bbQuote{1, 2}) {
		t.Fatalf("old blackboard after refusals: %v, %v, %+v", ok, err, q)
	}

	// Same geometry: replaced by a fresh, empty inode without asking.
	w2 := bbCreate[bbQuote](t, path, 8)
	w2.Write(0, &bbQuote{3, 4})
	if ok, err := old.Read(0, &q); !ok || err != nil || q != (bbQuote{1, 2}) {
		t.Errorf("old mapping saw the new inode: %v, %v, %+v", ok, err, q)
	}
	w2.Close()

	// Other geometry with Replace.
	w3, err := CreateBlackboard[[3]uint64](path, 2, BlackboardOptions{Replace: true})
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	w3.Close()
	if b := bbOpen[[3]uint64](t, path); b.Slots() != 2 {
		t.Errorf("replaced blackboard has %d slots, want 2", b.Slots())
	}

	// A file that is not a blackboard at all.
	other := bbPath(t)
	if err := os.WriteFile(other, []byte("not a blackboard"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateBlackboard[bbQuote](other, 8, BlackboardOptions{}); !errors.Is(err, ErrGeometry) {
		t.Errorf("over a foreign file = %v, want ErrGeometry", err)
	}
	w4, err := CreateBlackboard[bbQuote](other, 8, BlackboardOptions{Replace: true})
	if err != nil {
		t.Fatalf("Replace over a foreign file: %v", err)
	}
	w4.Close()
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
