package archive

import (
	"bytes"
	"context"
	"testing"
)

// History serves the epoch of its ring only, from any sequence it holds,
// stopping at a gap, at to, when fn says so, and at the end of what is
// written; Range follows the writer.
func TestHistory(t *testing.T) {
	dir := t.TempDir()
	other := testSrc
	other.Ino = 77
	w, _ := OpenWriter(dir, Options{SegmentSize: MinSegmentSize})
	w.Begin(other, 1, 0)
	writeRecords(t, w, 1, 50)
	w.Begin(testSrc, 100, 0)
	writeRecords(t, w, 100, 1000)
	w.Gap(1001, 1009, 0)
	writeRecords(t, w, 1010, 1100)
	w.Flush()
	r, _ := Open(dir)
	h := r.History(testSrc)
	if first, last, ok := h.Range(); !ok || first != 100 || last != 1100 {
		t.Fatalf("range %d..%d %v, want 100..1100", first, last, ok)
	}
	if _, _, ok := r.History(Source{Ino: 5}).Range(); ok {
		t.Fatal("a ring never recorded has a range")
	}
	read := func(from, to uint64, stopAt uint64) (uint64, []uint64) {
		var got []uint64
		next, err := h.Read(context.Background(), from, to, func(seq uint64, b []byte) bool {
			if seq == stopAt {
				return false
			}
			if !bytes.Equal(b, rec(seq)) {
				t.Fatalf("record %d: %x", seq, b)
			}
			got = append(got, seq)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return next, got
	}
	for _, c := range []struct{ from, to, stop, next, n uint64 }{
		{100, 1100, 0, 1001, 901}, // to the gap
		{500, 600, 0, 601, 101},   // to to
		{500, 600, 550, 550, 50},  // fn stops
		{1005, 1100, 0, 1101, 91}, // in the gap: from after it
		{1050, 2000, 0, 1101, 51}, // to the end written
		{50, 200, 0, 201, 101},    // before the history: from its first
	} {
		next, got := read(c.from, c.to, c.stop)
		if next != c.next || uint64(len(got)) != c.n || c.n > 0 && got[0] != max(c.from, 100) && got[0] != 1010 {
			t.Errorf("Read(%d, %d) stopping at %d: next %d, %d records; want %d, %d", c.from, c.to, c.stop, next, len(got), c.next, c.n)
		}
	}
	writeRecords(t, w, 1101, 1200)
	w.Close()
	if _, last, _ := h.Range(); last != 1200 {
		t.Fatalf("range ends at %d after more was written, want 1200", last)
	}
}
