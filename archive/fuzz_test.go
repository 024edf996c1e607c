package archive

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// segmentBytes is a real segment: records 1..n and a gap, for seeds.
func segmentBytes(t testing.TB, blob bool, n uint64) []byte {
	t.Helper()
	dir := t.TempDir()
	w, err := OpenWriter(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := testSrc
	if blob {
		src.Geometry = Geometry{PayloadSize: 16, Flags: shm.FlagArena, Capacity: 64, ArenaSize: 1 << 12}
	}
	if _, err := w.Begin(src, 1, 0); err != nil {
		t.Fatal(err)
	}
	for s := uint64(1); s <= n; s++ {
		r := rec(s)
		if blob {
			r = blobRec(s)
		}
		if err := w.Append(s, int64(s), r); err != nil {
			t.Fatal(err)
		}
	}
	w.Gap(n+1, n+5, 0)
	w.Close()
	b, err := os.ReadFile(lastSegment(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzSegment: any bytes as a segment. Reading never panics; what reads
// as whole entries encodes back to exactly the bytes it was read from;
// a writer opening the segment recovers to a state Verify finds clean.
func FuzzSegment(f *testing.F) {
	f.Add(segmentBytes(f, false, 3))
	f.Add(segmentBytes(f, true, 3))
	f.Add(segmentBytes(f, false, 1)[:headerSize+20])
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		h, err := readHeader(r)
		if err != nil {
			return
		}
		sc := newScanner(r, h.Source.Geometry, headerSize)
		for {
			e, off, err := sc.next()
			if err != nil {
				break
			}
			var p []byte
			if e.Kind == KindRecord {
				p = e.Rec
			} else {
				p = le.AppendUint64(nil, e.Last)
			}
			if got := appendEntry(nil, e.Kind, e.Seq, e.Time, p); !bytes.Equal(got, b[off:sc.off]) {
				t.Fatalf("entry at %d does not encode back", off)
			}
		}
		dir := t.TempDir()
		name := filepath.Join(dir, "0000000000000001-0000000000000001"+dataExt)
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := OpenWriter(dir, Options{})
		if err != nil {
			return // a header that parses for another name, or corrupt: refused
		}
		w.Close()
		rd, _ := Open(dir)
		rep, err := rd.Verify()
		if err != nil || len(rep.Problems) > 0 || rep.Tail != nil {
			t.Fatalf("after recovery: %+v, %v", rep, err)
		}
	})
}

// FuzzIndex: any bytes as an index never panic, and what parses encodes
// back to the same bytes.
func FuzzIndex(f *testing.F) {
	x := &index{points: []point{{1, 5, headerSize}, {900, 7, headerSize + indexEvery}}, last: 1000, lastTime: 9,
		size: headerSize + 2*indexEvery, records: 1000}
	f.Add(x.encode())
	x.blockSize, x.blocks = blockSize, []int64{0, 100}
	f.Add(x.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := parseIndex(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		if !bytes.Equal(x.encode(), b) {
			t.Fatal("index does not encode back")
		}
	})
}

// blobRec is record seq of a blob ring of 16-byte slots: a descriptor of
// a blob of seq%7 bytes, then the blob.
func blobRec(seq uint64) []byte {
	b := make([]byte, 16, 16+seq%7)
	shm.Descriptor{Offset: seq, Len: uint32(seq % 7)}.Encode(b)
	for i := range seq % 7 {
		b = append(b, byte(seq+i))
	}
	return b
}
