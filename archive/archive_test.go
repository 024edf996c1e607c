package archive

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// testGeo is a fixed ring of 16-byte records.
var testGeo = Geometry{PayloadSize: 16, Capacity: 1024}

var testSrc = Source{Geometry: testGeo, Dev: 1, Ino: 2}

// rec is record seq's bytes in the tests: the sequence, twice.
func rec(seq uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, seq)
	binary.LittleEndian.PutUint64(b[8:], ^seq)
	return b
}

// writeRecords appends records from..to to w, at time seq*1000.
func writeRecords(t testing.TB, w *Writer, from, to uint64) {
	t.Helper()
	for s := from; s <= to; s++ {
		if err := w.Append(s, int64(s)*1000, rec(s)); err != nil {
			t.Fatalf("append %d: %v", s, err)
		}
	}
}

// readAll reads epoch from seq on until io.EOF.
func readAll(t testing.TB, r *Reader, epoch, seq uint64) []Entry {
	t.Helper()
	c, err := r.Seek(epoch, seq)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return rcDrain(t, c)
}

// checkRecords fails unless es are records from..to, in order, intact.
func checkRecords(t testing.TB, es []Entry, from, to uint64) {
	t.Helper()
	if uint64(len(es)) != to-from+1 {
		t.Fatalf("%d entries, want %d (%d..%d)", len(es), to-from+1, from, to)
	}
	for i, e := range es {
		s := from + uint64(i)
		if e.Kind != KindRecord || e.Seq != s || !bytes.Equal(e.Rec, rec(s)) || e.Time != int64(s)*1000 {
			t.Fatalf("entry %d: %+v, want record %d", i, e, s)
		}
	}
}

func TestWriteRead(t *testing.T) {
	for _, compress := range []bool{false, true} {
		dir := t.TempDir()
		w, err := OpenWriter(dir, Options{SegmentSize: MinSegmentSize, Compress: compress})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Begin(testSrc, 1, 0); err != nil {
			t.Fatal(err)
		}
		writeRecords(t, w, 1, 5000)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, readAll(t, r, 1, 1), 1, 5000)
		checkRecords(t, readAll(t, r, 1, 4321), 4321, 5000)
		writeRecords(t, w, 5001, 6000)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, readAll(t, r, 1, 777), 777, 6000)
		eps, err := r.Epochs()
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) != 1 || eps[0].First != 1 || eps[0].Last != 6000 || len(eps[0].Segments) < 10 {
			t.Fatalf("epochs %+v", eps)
		}
		rep, err := r.Verify()
		if err != nil || len(rep.Problems) > 0 || rep.Tail != nil || rep.Records != 6000 {
			t.Fatalf("verify: %+v, %v", rep, err)
		}
	}
}
