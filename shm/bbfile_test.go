package shm

// Blackboard file format tests: the reference implementation's fixture, the
// bytes our writer lays down, refusal of corrupt files (naming the field),
// and a writer that stalls between its two seqlock updates.

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// bbPoke overwrites n (4 or 8) little-endian bytes of the file at off,
// through the file (the page cache is shared with every mapping).
func bbPoke(t *testing.T, path string, off int64, n int, val uint64) {
	t.Helper()
	if err := bbWriteWord(path, off, n, val); err != nil {
		t.Fatal(err)
	}
}

func bbWriteWord(path string, off int64, n int, val uint64) error {
	var b [8]byte
	le.PutUint64(b[:], val)
	return pokeFile(path, off, b[:n])
}

// The fixture was written by the reference implementation's Python producer.
func TestBlackboardForeignFixture(t *testing.T) {
	path, fixture := fixtureCopy(t, "bb-py-8x16.bin")
	if len(fixture) != 640 {
		t.Fatalf("fixture is %d bytes, want 640", len(fixture))
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
		if got := le.Uint64(fixture[128+64*k:]); got != seq {
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
