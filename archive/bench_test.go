package archive

import (
	"errors"
	"io"
	"testing"
)

var geo64 = Geometry{PayloadSize: 64, Capacity: 1 << 20}

// BenchmarkAppend: one 64-byte record appended (framed, CRC'd, indexed,
// written in 1 MiB writes) into tmpfs.
func BenchmarkAppend(b *testing.B) {
	w, err := OpenWriter(rcTmpfs(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	w.Begin(Source{Geometry: geo64}, 1, 0)
	p := make([]byte, 64)
	b.SetBytes(int64(entrySize(64)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := w.Append(uint64(i)+1, int64(i), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCursor: one 64-byte record read back (CRC checked) from a
// page-cached plain archive of 16 MiB segments: sealed ones (mapped), and
// the last one, unsealed (read through a buffer).
func BenchmarkCursor(b *testing.B) {
	dir := rcTmpfs(b)
	w, _ := OpenWriter(dir, Options{SegmentSize: 16 << 20})
	w.Begin(Source{Geometry: geo64}, 1, 0)
	p := make([]byte, 64)
	for i := range b.N {
		w.Append(uint64(i)+1, int64(i), p)
	}
	w.Close()
	r, _ := Open(dir)
	c, err := r.Seek(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(entrySize(64)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Next(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if _, err := c.Next(); !errors.Is(err, io.EOF) {
		b.Fatalf("after the last: %v", err)
	}
}

// BenchmarkSeek: a seek to a sequence in an archive of 4M records in 64
// segments of 8 MiB, and the record read.
func BenchmarkSeek(b *testing.B) {
	dir := rcTmpfs(b)
	const n = 4 << 20
	w, _ := OpenWriter(dir, Options{SegmentSize: 8 << 20})
	w.Begin(Source{Geometry: geo64}, 1, 0)
	p := make([]byte, 64)
	for i := range uint64(n) {
		w.Append(i+1, int64(i), p)
	}
	w.Close()
	r, _ := Open(dir)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		seq := uint64(i*7919)%n + 1
		c, err := r.Seek(1, seq)
		if err != nil {
			b.Fatal(err)
		}
		if e, err := c.Next(); err != nil || e.Seq != seq {
			b.Fatalf("seek %d: %+v, %v", seq, e, err)
		}
		c.Close()
	}
}
