package archive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// rcAbandon drops w as a killed process would: its files closed (the
// lock released), nothing flushed, nothing sealed.
func rcAbandon(w *Writer) {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	w.lock.Close()
	w.lock = nil
}

// TestRecordTornTail: a recorder's writer abandoned mid-way (kill -9),
// then a power cut simulated by truncating the last segment at several
// offsets (mid-entry, on an entry boundary, just past the header): the
// next recorder cuts the torn tail, resumes after the last whole record
// from the ring, and the archive holds every record exactly once.
func TestRecordTornTail(t *testing.T) {
	one := int64(entrySize(64))
	for _, back := range []int64{1, 20, one - 1, one, one + 7, 3*one + 5, -1} {
		t.Run(fmt.Sprint(back), func(t *testing.T) {
			ring, dir := rcShmPath(t), t.TempDir()
			p := rcRing(t, ring, 4096)
			rcPush(t, p, 1, 300, 1)
			w := rcOpenWriter(t, dir, Options{SegmentSize: 8 << 10})
			run := rcRecord(t, w, RecorderConfig{Ring: ring})
			run.until(t, 300)
			if err := run.end(t); err != nil {
				t.Fatal(err)
			}
			rcAbandon(w)
			seg := lastSegment(t, dir)
			fi, err := os.Stat(seg)
			if err != nil {
				t.Fatal(err)
			}
			cut := fi.Size() - back
			if back < 0 {
				cut = headerSize + 3
			}
			if err := os.Truncate(seg, cut); err != nil {
				t.Fatal(err)
			}
			rcPush(t, p, 301, 400, 1)
			w = rcOpenWriter(t, dir, Options{SegmentSize: 8 << 10})
			if ws := w.Stats(); ws.TornBytes == 0 && back != one {
				t.Errorf("no torn bytes cut after a cut %d bytes back", back)
			}
			run = rcRecord(t, w, RecorderConfig{Ring: ring, Start: StartResume})
			run.until(t, 400)
			if err := run.end(t); err != nil {
				t.Fatal(err)
			}
			rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 400, 1})
		})
	}
}

// TestRecordFullDisk: a full filesystem stops the recorder with an error
// wrapping ErrBroken, counted; the ring is untouched (its producer goes
// on, its records read); once space is freed, a reopened writer cuts the
// torn tail and the recorder resumes: every record once.
func TestRecordFullDisk(t *testing.T) {
	mnt := testenv.Tmpfs(t, "256k")
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 200<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "archive")
	ring := rcShmPath(t)
	p := rcRing(t, ring, 4096)
	const n = 1500 // 1500 entries of 96 bytes: more than the 56 KiB left
	rcPush(t, p, 1, n, 1)
	opts := Options{SegmentSize: 32 << 10, BufferSize: 4 << 10}
	w, err := OpenWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	run := rcRecord(t, w, RecorderConfig{Ring: ring})
	var rerr error
	select {
	case rerr = <-run.done:
		run.done <- rerr
	case <-time.After(rcWait):
		t.Fatal("the recorder did not stop on a full filesystem")
	}
	if !errors.Is(rerr, ErrBroken) {
		t.Fatalf("Run: %v, want an error wrapping ErrBroken", rerr)
	}
	st := run.r.Stats()
	if st.Writer.WriteErrors != 1 || st.Next > n {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("full after %d records: %v", st.Next-1, rerr)
	w.Close()
	rcPush(t, p, n+1, n+1, 1) // the ring goes on, untouched
	if got := rcRingRecords(t, ring, 1, n+1); len(got) != n+1 {
		t.Fatalf("ring holds %d records", len(got))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	w = rcOpenWriter(t, dir, opts)
	run = rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, n+1)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, n + 1, 1})
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rep, err := r.Verify(); err != nil || len(rep.Problems) > 0 || rep.Records != n+1 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

var _ = shm.ErrTruncated
