package archive

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// openBegun opens dir and begins (or goes on with) testSrc at next.
func openBegun(t testing.TB, dir string, opts Options, next uint64) *Writer {
	t.Helper()
	w, err := OpenWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Begin(testSrc, next, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

// lastSegment is the path of the archive's last data file.
func lastSegment(t testing.TB, dir string) string {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v, %v", segs, err)
	}
	return segs[len(segs)-1].data()
}

// A power cut can leave the last segment cut at any byte. Cut inside the
// last record at every offset, a reopened writer keeps every whole record,
// cuts the rest (TornBytes), and goes on at the next sequence: nothing
// twice, nothing missing.
func TestTornTailEveryByte(t *testing.T) {
	base := t.TempDir()
	w := openBegun(t, base, Options{}, 1)
	writeRecords(t, w, 1, 100)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(lastSegment(t, base))
	if err != nil {
		t.Fatal(err)
	}
	rec := entrySize(16)
	whole := len(data)
	for cut := whole - rec; cut < whole; cut++ {
		dir := t.TempDir()
		name := filepath.Base(lastSegment(t, base))
		if err := os.WriteFile(filepath.Join(dir, name), data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := OpenWriter(dir, Options{})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		_, _, last, ok := w.Position()
		if !ok || last != 99 {
			t.Fatalf("cut at %d: position %d, %v; want 99", cut, last, ok)
		}
		if got := w.Stats().TornBytes; got != uint64(cut-(whole-rec)) {
			t.Fatalf("cut at %d: TornBytes %d, want %d", cut, got, cut-(whole-rec))
		}
		if _, err := w.Begin(testSrc, 100, 0); err != nil {
			t.Fatal(err)
		}
		writeRecords(t, w, 100, 120)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, _ := Open(dir)
		checkRecords(t, readAll(t, r, 1, 1), 1, 120)
	}
}

// A segment whose header was torn held nothing: it is removed, and the
// archive ends where the segment before it did.
func TestTornHeader(t *testing.T) {
	dir := t.TempDir()
	w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize}, 1)
	writeRecords(t, w, 1, 1000)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := listSegments(dir)
	last := segs[len(segs)-1]
	if err := os.Truncate(last.data(), 100); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(dir, Options{SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	_, _, pos, _ := w.Position()
	if pos != last.first-1 || fileExists(last.data()) {
		t.Fatalf("position %d, want %d; torn segment still there: %v", pos, last.first-1, fileExists(last.data()))
	}
	if _, err := w.Begin(testSrc, pos+1, 0); err != nil {
		t.Fatal(err)
	}
	writeRecords(t, w, pos+1, 1200)
	w.Close()
	r, _ := Open(dir)
	checkRecords(t, readAll(t, r, 1, 1), 1, 1200)
}

// A crash between sealing steps: a segment left unsealed behind a later
// one is sealed at open; a compressed one whose plain file is still
// there loses the plain file; a leftover temporary file goes.
func TestRecoverSealing(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSize: MinSegmentSize, Compress: true}
	w := openBegun(t, dir, opts, 1)
	writeRecords(t, w, 1, 2000)
	w.Close()
	segs, _ := listSegments(dir)
	if len(segs) < 4 || !segs[0].sealed || !segs[0].compressed {
		t.Fatalf("segments %+v", segs)
	}
	// Unseal the second (drop its index, bring its plain data back),
	// leave a plain copy beside the first, and a temporary file.
	d, err := openData(segs[1], mustIndex(t, segs[1]), nil)
	if err != nil {
		t.Fatal(err)
	}
	x := mustIndex(t, segs[1])
	buf := make([]byte, x.size)
	if _, err := d.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	d.Close()
	os.WriteFile(segs[1].base+dataExt, buf, 0o644)
	os.Remove(segs[1].base + zstExt)
	os.Remove(segs[1].base + idxExt)
	os.WriteFile(segs[0].base+dataExt, []byte("stale"), 0o644)
	os.WriteFile(segs[2].base+idxExt+tmpExt, []byte("half"), 0o644)

	w, err = OpenWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	after, _ := listSegments(dir)
	for _, s := range after[:len(after)-1] {
		if !s.sealed || !s.compressed || fileExists(s.base+dataExt) {
			t.Fatalf("after recovery %+v (plain file there: %v)", s, fileExists(s.base+dataExt))
		}
	}
	if fileExists(segs[2].base + idxExt + tmpExt) {
		t.Fatal("temporary file left")
	}
	r, _ := Open(dir)
	checkRecords(t, readAll(t, r, 1, 1), 1, 2000)
}

func mustIndex(t testing.TB, s segment) *index {
	t.Helper()
	x, err := readIndex(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// One writer per directory; appends in order only.
func TestWriterRules(t *testing.T) {
	dir := t.TempDir()
	w := openBegun(t, dir, Options{}, 10)
	if _, err := OpenWriter(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	if err := w.Append(11, 0, rec(11)); !errors.Is(err, ErrOrder) {
		t.Fatalf("append 11 first: %v, want ErrOrder", err)
	}
	writeRecords(t, w, 10, 12)
	if err := w.Append(12, 0, rec(12)); !errors.Is(err, ErrOrder) {
		t.Fatalf("append 12 twice: %v, want ErrOrder", err)
	}
	if err := w.Append(13, 0, make([]byte, 15)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short record: %v, want ErrCorrupt", err)
	}
	if err := w.Gap(13, 12, 0); !errors.Is(err, ErrOrder) {
		t.Fatalf("empty gap: %v, want ErrOrder", err)
	}
	if err := w.Gap(13, 20, 0); err != nil {
		t.Fatal(err)
	}
	// The same ring further on: the epoch goes on, a gap between.
	if newEp, err := w.Begin(testSrc, 30, 0); err != nil || newEp {
		t.Fatalf("begin at 30: new epoch %v, %v", newEp, err)
	}
	// Another ring: a new epoch.
	other := testSrc
	other.Ino++
	if newEp, err := w.Begin(other, 5, 0); err != nil || !newEp {
		t.Fatalf("begin another ring: new epoch %v, %v", newEp, err)
	}
	writeRecords(t, w, 5, 6)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(7, 0, rec(7)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	r, _ := Open(dir)
	eps, err := r.Epochs()
	if err != nil || len(eps) != 2 || eps[0].First != 10 || eps[0].Last != 29 || eps[1].First != 5 || eps[1].Last != 6 || eps[1].Source != other {
		t.Fatalf("epochs %+v, %v", eps, err)
	}
	es := readAll(t, r, 1, 1)
	if len(es) != 5 || es[3].Kind != KindGap || es[3].Seq != 13 || es[3].Last != 20 || es[4].Seq != 21 || es[4].Last != 29 {
		t.Fatalf("epoch 1: %+v", es)
	}
}

// SyncInterval: what was written is synced within about SyncEvery even
// when nothing more is written (the flusher syncs as it writes; SyncDue,
// which an idle recorder calls, syncs the rest), and nothing is synced
// twice.
func TestSyncIntervalWhenIdle(t *testing.T) {
	w := openBegun(t, t.TempDir(), Options{Sync: SyncInterval, SyncEvery: 50 * time.Millisecond}, 1)
	defer w.Close()
	writeRecords(t, w, 1, 10)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 5*time.Second, "the written records synced", func() bool {
		if err := w.SyncDue(); err != nil { // polled, as an idle recorder does
			t.Fatal(err)
		}
		return !w.io.unsynced.Load()
	})
	syncs := w.Stats().Syncs
	if syncs == 0 {
		t.Fatal("no sync counted")
	}
	for range 3 {
		if err := w.SyncDue(); err != nil {
			t.Fatal(err)
		}
	}
	if w.Stats().Syncs != syncs {
		t.Fatalf("synced again with nothing written: %d syncs, was %d", w.Stats().Syncs, syncs)
	}
}
