package archive

import (
	"bytes"
	"context"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// rcMeta is the metadata of the blob ring in these tests.
type rcMeta struct{ Seq, Salt uint64 }

// rcBlob is record seq's blob: n bytes from seq.
func rcBlob(seq uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seq + uint64(i)*3)
	}
	return b
}

// rcBlobRing creates a blob ring at path.
func rcBlobRing(tb testing.TB, path string, capacity, arena uint64) *shm.BlobProducer[rcMeta] {
	tb.Helper()
	p, err := shm.NewBlobProducer[rcMeta](path, shm.BlobOptions{Capacity: capacity, ArenaSize: arena, Replace: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// rcPushBlobs pushes records from..to with blobs of size(seq) bytes and
// descriptor flags seq.
func rcPushBlobs(tb testing.TB, p *shm.BlobProducer[rcMeta], from, to uint64, size func(uint64) int) {
	tb.Helper()
	for s := from; s <= to; s++ {
		if got, err := p.PushFlags(&rcMeta{s, 9}, rcBlob(s, size(s)), uint32(s)); err != nil || got != s {
			tb.Fatalf("push %d: got %d, %v", s, got, err)
		}
	}
}

// rcCheckBlobRing fails unless the ring at path holds records from..to
// as rcPushBlobs wrote them: the metadata, the descriptor's length and
// flags, and the blob.
func rcCheckBlobRing(tb testing.TB, path string, from, to uint64, size func(uint64) int) {
	tb.Helper()
	ring, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer ring.Close()
	slot := make([]byte, ring.Layout().PayloadSize())
	for s := from; s <= to; s++ {
		if st, err := ring.ReadSlot(s, slot); st != shm.SlotReady || err != nil {
			tb.Fatalf("record %d: %v, %v", s, st, err)
		}
		d := shm.DecodeDescriptor(slot)
		meta := rcMeta{le.Uint64(slot), le.Uint64(slot[8:])}
		if meta != (rcMeta{s, 9}) || int(d.Len) != size(s) || d.Flags != uint32(s) {
			tb.Fatalf("record %d: meta %+v, descriptor %+v", s, meta, d)
		}
		b := make([]byte, d.Len)
		if whole, err := ring.ReadBlob(d, b); !whole || err != nil || !bytes.Equal(b, rcBlob(s, size(s))) {
			tb.Fatalf("record %d: blob whole %v, %v, equal %v", s, whole, err, bytes.Equal(b, rcBlob(s, size(s))))
		}
	}
}

// TestRecordReplayBlob records a blob ring with blobs of every size
// from 0, and replays it: the same metadata, flags and blob bytes, each
// blob in the new ring's arena.
func TestRecordReplayBlob(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	size := func(s uint64) int { return int(s*37) % 700 }
	p := rcBlobRing(t, ring, 1024, 1<<20) // holds them all
	w := rcOpenWriter(t, dir, Options{SegmentSize: 32 << 10})
	run := rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, 0)
	rcPushBlobs(t, p, 1, 600, size)
	run.until(t, 600)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	if st := run.r.Stats(); st.Records != 600 || st.Gaps != 0 {
		t.Fatalf("stats %+v", st)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := rcShmPath(t)
	st, err := Replay(context.Background(), r, ReplayConfig{Ring: out, From: 345})
	if err != nil || st.Records != 256 || st.First != 345 || st.Last != 600 {
		t.Fatalf("replay: %+v, %v", st, err)
	}
	rcCheckBlobRing(t, out, 345, 600, size)
}

// TestRecordBlobLapped: a record whose slot the ring still holds but
// whose blob the arena lapped is a gap of that record.
func TestRecordBlobLapped(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	size := func(uint64) int { return 256 }
	p := rcBlobRing(t, ring, 256, 4096) // 16 blobs of 256 bytes
	rcPushBlobs(t, p, 1, 10, size)
	w := rcOpenWriter(t, dir, Options{})
	run := rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, 10)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcPushBlobs(t, p, 11, 60, size) // blobs 1..44 lapped, slots all there
	run = rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, 60)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	es := rcEntries(t, dir, 1)
	if len(es) != 10+1+16 || es[10].Kind != KindGap || es[10].Seq != 11 || es[10].Last != 44 || es[11].Seq != 45 {
		t.Fatalf("%d entries, entry 10 %s, entry 11 %s", len(es), rcDescribe(es, 10), rcDescribe(es, 11))
	}
	for _, e := range append(es[:10:10], es[11:]...) {
		if e.Kind != KindRecord || !bytes.Equal(e.Rec[32:], rcBlob(e.Seq, 256)) {
			t.Fatalf("entry %s: blob differs", rcDescribe([]Entry{e}, 0))
		}
	}
}
