package archive

import (
	"errors"
	"io"
	"testing"
)

// TestFollowRotation: a reader that follows a writer never meets a
// segment file without its header. The writer starts a segment (the
// last one sealed) and buffers an entry without writing it yet: a
// cursor at the end of the sealed segment gets io.EOF, Epochs lists the
// archive, and once the writer flushes, the cursor reads the entry from
// the new segment.
func TestFollowRotation(t *testing.T) {
	dir := t.TempDir()
	w := rcOpenWriter(t, dir, Options{SegmentSize: MinSegmentSize, BufferSize: 1 << 20})
	if _, err := w.Begin(rcSrc, 1, rcTime(1)); err != nil {
		t.Fatal(err)
	}
	var s uint64
	for s = 1; w.size < MinSegmentSize; s++ {
		if err := w.Append(s, rcTime(s), rcPayload(s, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := rcOpen(t, dir)
	c, err := r.Seek(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if es := rcDrain(t, c); uint64(len(es)) != s-1 {
		t.Fatalf("%d entries, want %d", len(es), s-1)
	}
	if err := w.Append(s, rcTime(s), rcPayload(s, 1)); err != nil { // seals, starts the next segment
		t.Fatal(err)
	}
	if ws := w.Stats(); ws.Sealed != 1 {
		t.Fatalf("%d segments sealed, want 1", ws.Sealed)
	}
	if e, err := c.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next in a segment being begun: %s, %v; want io.EOF", rcDescribe([]Entry{e}, 0), err)
	}
	if eps, err := r.Epochs(); err != nil || len(eps) != 1 {
		t.Fatalf("Epochs in a segment being begun: %+v, %v", eps, err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Next(); err != nil || e.Seq != s {
		t.Fatalf("Next after the flush: %s, %v; want record %d", rcDescribe([]Entry{e}, 0), err, s)
	}
}
