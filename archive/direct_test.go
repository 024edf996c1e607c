package archive

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// diskDir is a directory on a filesystem that takes O_DIRECT (the test
// binary's temporary directory, on this machine kind the root disk).
func diskDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	f, err := openDirect(filepath.Join(dir, "probe"))
	if err != nil {
		probe, cerr := os.Create(filepath.Join(dir, "probe"))
		if cerr == nil {
			probe.Close()
			f, err = openDirect(filepath.Join(dir, "probe"))
		}
	}
	if err != nil {
		var st unix.Statfs_t
		unix.Statfs(dir, &st)
		testenv.Skipf(t, "%s (filesystem type %#x) takes no O_DIRECT: %v", dir, st.Type, err)
	}
	f.Close()
	os.Remove(filepath.Join(dir, "probe"))
	return dir
}

// directSrc is a blob ring whose blobs reach 300 KiB: entries larger than
// the tests' 64 KiB write buffer.
var directSrc = Source{Geometry: Geometry{PayloadSize: 16, Flags: shm.FlagArena, Capacity: 64, ArenaSize: 1 << 20}, Dev: 5, Ino: 6}

// directRec is record seq: a descriptor of a blob of n bytes, the blob.
func directRec(seq uint64, n int) []byte {
	b := make([]byte, 16, 16+n)
	shm.Descriptor{Offset: seq, Len: uint32(n)}.Encode(b)
	for i := range n {
		b = append(b, byte(seq)^byte(i))
	}
	return b
}

// directWrite appends records from..to of sizes drawn from rng, with a
// Push or a Flush now and then, and checks after each Flush that a
// Reader reads every record so far.
func directWrite(t *testing.T, w *Writer, dir string, rng *rand.Rand, from, to uint64) {
	t.Helper()
	for s := from; s <= to; s++ {
		n := rng.IntN(200)
		if rng.IntN(50) == 0 {
			n = 300 << 10
		}
		if err := w.Append(s, int64(s), directRec(s, n)); err != nil {
			t.Fatalf("append %d: %v", s, err)
		}
		switch rng.IntN(40) {
		case 0:
			if err := w.Push(); err != nil {
				t.Fatalf("push at %d: %v", s, err)
			}
		case 1:
			if err := w.Flush(); err != nil {
				t.Fatalf("flush at %d: %v", s, err)
			}
			if got := rcArchived(dir); got != s {
				t.Fatalf("after the flush of record %d readers read up to %d", s, got)
			}
		}
	}
}

// TestDirectWrites: an archive written with O_DIRECT (whole blocks from
// aligned buffers; partial blocks through the page cache at each Push and
// Flush; entries larger than the buffer; a writer reopened on a segment
// whose end is not block-aligned) reads back whole after every Flush,
// and is byte for byte the archive that the same appends write through
// the page cache.
func TestDirectWrites(t *testing.T) {
	var files [2]map[string][]byte
	for i, pageCache := range []bool{false, true} {
		dir := diskDir(t)
		opts := Options{SegmentSize: 1 << 20, BufferSize: 64 << 10, PageCache: pageCache}
		rng := rand.New(rand.NewPCG(1, 2))
		w := rcOpenWriter(t, dir, opts)
		if _, err := w.Begin(directSrc, 1, 1); err != nil {
			t.Fatal(err)
		}
		directWrite(t, w, dir, rng, 1, 3000)
		if got := w.Stats().Direct; got == pageCache {
			t.Fatalf("PageCache %v: Stats().Direct %v", pageCache, got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		w = rcOpenWriter(t, dir, opts) // the last segment's end is not aligned
		if _, err := w.Begin(directSrc, 3001, 3001); err != nil {
			t.Fatal(err)
		}
		directWrite(t, w, dir, rng, 3001, 6000)
		if got := w.Stats().Direct; got == pageCache {
			t.Fatalf("PageCache %v, reopened: Stats().Direct %v", pageCache, got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		es := rcEntries(t, dir, 1)
		rng = rand.New(rand.NewPCG(1, 2))
		for j, e := range es {
			s := uint64(j + 1)
			if e.Kind != KindRecord || e.Seq != s || len(e.Rec) < 16 || !bytes.Equal(e.Rec, directRec(s, len(e.Rec)-16)) {
				t.Fatalf("PageCache %v: entry %d is %s", pageCache, j, rcDescribe(es, j))
			}
		}
		if len(es) != 6000 {
			t.Fatalf("PageCache %v: %d entries, want 6000", pageCache, len(es))
		}
		files[i] = dirFiles(t, dir)
	}
	if len(files[0]) != len(files[1]) || len(files[0]) < 3 {
		t.Fatalf("%d files written directly, %d through the page cache", len(files[0]), len(files[1]))
	}
	for name, b := range files[0] {
		if !bytes.Equal(b, files[1][name]) {
			t.Fatalf("%s differs: %d bytes written directly, %d through the page cache", name, len(b), len(files[1][name]))
		}
	}
}

// dirFiles reads every segment and index file of dir.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); ext != dataExt && ext != idxExt {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestMappedCut: a sealed segment a cursor went on to is read through a
// mapping; a file cut
// under it (by something outside the archive) is an error of the cursor,
// wrapping ErrCorrupt and counted, where the fault would kill the process.
func TestMappedCut(t *testing.T) {
	dir := t.TempDir()
	w := rcOpenWriter(t, dir, Options{SegmentSize: 64 << 10})
	if _, err := w.Begin(testSrc, 1, 0); err != nil {
		t.Fatal(err)
	}
	writeRecords(t, w, 1, 5000) // 48-byte entries: four sealed segments
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := rcOpen(t, dir)
	c, err := r.Seek(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for s := uint64(1); c.mapped == nil; s++ { // the seek's segment is read, the next mapped
		if e, err := c.Next(); err != nil || e.Seq != s {
			t.Fatalf("record %d: %+v, %v", s, e, err)
		}
		if s == 5000 {
			t.Fatal("no sealed segment was mapped")
		}
	}
	if err := os.Truncate(c.seg.data(), 8192); err != nil {
		t.Fatal(err)
	}
	var n int
	for n = 0; n < 5000; n++ {
		if _, err = c.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "cut while mapped") {
		t.Fatalf("after %d more records: %v, want a cut mapping's ErrCorrupt", n, err)
	}
	if got := r.Stats().Corrupt; got == 0 {
		t.Fatalf("Stats().Corrupt %d after the cut", got)
	}
}
