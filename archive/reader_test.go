package archive

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// SeekTime finds the first entry seen at or after a time, across
// segments, plain and compressed.
func TestSeekTime(t *testing.T) {
	for _, compress := range []bool{false, true} {
		dir := t.TempDir()
		w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize, Compress: compress}, 1)
		writeRecords(t, w, 1, 3000) // record s seen at s*1000 ns
		w.Close()
		r, _ := Open(dir)
		for _, s := range []uint64{1, 2, 500, 1999, 3000} {
			c, err := r.SeekTime(1, int64(s)*1000-500)
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.Next()
			c.Close()
			if err != nil || e.Seq != s {
				t.Fatalf("compress %v: seek to time of %d: %+v, %v", compress, s, e, err)
			}
		}
		c, _ := r.SeekTime(1, 3001*1000)
		if _, err := c.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("seek past the end: %v, want io.EOF", err)
		}
		if _, err := r.Seek(2, 1); !errors.Is(err, ErrNotFound) {
			t.Fatalf("seek in a missing epoch: %v, want ErrNotFound", err)
		}
	}
}

// A cursor at the end of what is written sees what the writer appends
// next, also once the writer seals the segment it was reading (and
// compresses it, removing its plain file) and starts others.
func TestCursorFollows(t *testing.T) {
	dir := t.TempDir()
	w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize, Compress: true, BufferSize: 512}, 1)
	writeRecords(t, w, 1, 10)
	w.Flush()
	r, _ := Open(dir)
	c, err := r.Seek(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next := uint64(1)
	for round := uint64(0); round < 30; round++ {
		for {
			e, err := c.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("at %d: %v", next, err)
			}
			if e.Seq != next {
				t.Fatalf("got %d, want %d", e.Seq, next)
			}
			next++
		}
		to := 10 + (round+1)*37
		writeRecords(t, w, 10+round*37+1, to)
		w.Flush()
	}
	w.Close()
	for {
		e, err := c.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || e.Seq != next {
			t.Fatalf("got %+v, %v; want %d", e, err, next)
		}
		next++
	}
	if next != 10+30*37+1 {
		t.Fatalf("read up to %d, want %d", next-1, 10+30*37)
	}
}

// Retention removes the oldest sealed segments, whole, past MaxBytes and
// MaxAge, never the one being written; readers of what is left are not
// disturbed.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize, MaxBytes: 4 * MinSegmentSize}, 1)
	writeRecords(t, w, 1, 5000)
	w.Flush()
	segs, _ := listSegments(dir)
	var sealed int64
	for _, s := range segs {
		if s.sealed {
			sealed += s.size + fileSize(s.base+idxExt)
		}
	}
	if sealed > 4*MinSegmentSize || w.Stats().Removed == 0 || segs[len(segs)-1].sealed {
		t.Fatalf("sealed bytes %d (limit %d), removed %d, last sealed %v", sealed, 4*MinSegmentSize, w.Stats().Removed, segs[len(segs)-1].sealed)
	}
	r, _ := Open(dir)
	first := segs[0].first
	checkRecords(t, readAll(t, r, 1, first), first, 5000)
	w.Close()

	// By age: times are record*1000 ns after 1970, far past any MaxAge.
	w, err := OpenWriter(dir, Options{SegmentSize: MinSegmentSize, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w.Begin(testSrc, 5001, 0)
	writeRecords(t, w, 5001, 5200) // seals the segment being written: every sealed one is old
	w.Close()
	segs, _ = listSegments(dir)
	for _, s := range segs[:len(segs)-1] {
		if s.sealed {
			t.Fatalf("segment %+v older than MaxAge kept", s)
		}
	}
}

// Verify reads everything: a flipped byte in a sealed segment is a
// problem naming the file; a torn tail of the segment being written is
// reported as such, not as corruption.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize}, 1)
	writeRecords(t, w, 1, 1000)
	w.Gap(1001, 1010, 0)
	writeRecords(t, w, 1011, 1100)
	w.Close()
	r, _ := Open(dir)
	rep, err := r.Verify()
	if err != nil || len(rep.Problems) != 0 || rep.Records != 1090 || rep.Gaps != 1 || rep.GapRecords != 10 {
		t.Fatalf("clean archive: %+v, %v", rep, err)
	}
	segs, _ := listSegments(dir)
	b, _ := os.ReadFile(segs[1].data())
	b[headerSize+40] ^= 0x20
	os.WriteFile(segs[1].data(), b, 0o644)
	last := segs[len(segs)-1].data()
	fi, _ := os.Stat(last)
	os.Truncate(last, fi.Size()-3)
	rep, _ = r.Verify()
	if len(rep.Problems) != 1 || !errors.Is(rep.Problems[0], ErrCorrupt) || !strings.Contains(rep.Problems[0].Error(), segs[1].data()) {
		t.Fatalf("flipped byte: problems %v", rep.Problems)
	}
	if rep.Tail == nil {
		t.Fatal("torn tail not reported")
	}
	c, _ := r.Seek(1, segs[1].first)
	if _, err := c.Next(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading the flipped entry: %v, want ErrCorrupt", err)
	}
}

// Retention and the compressor meet: segments removed while queued or
// being compressed leave no file behind (nothing listed that is not
// whole and in order), and what is kept reads whole.
func TestRetentionWhileCompressing(t *testing.T) {
	dir := t.TempDir()
	w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize, Compress: true, MaxBytes: 3 * MinSegmentSize}, 1)
	writeRecords(t, w, 1, 20000)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Removed == 0 || st.CompressErrors != 0 {
		t.Fatalf("stats %+v: want segments removed, no compression error", st)
	}
	segs, _ := listSegments(dir)
	for i, s := range segs {
		if i > 0 && !fileExists(segs[i-1].base+idxExt) {
			t.Fatalf("segment %d before %s has no index", i-1, s.data())
		}
	}
	r, _ := Open(dir)
	rep, err := r.Verify()
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	checkRecords(t, readAll(t, r, 1, segs[0].first), segs[0].first, 20000)
}
