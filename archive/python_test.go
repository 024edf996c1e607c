package archive

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/testenv"
)

// tool returns the path of a command the test needs: make test's deps
// install it, so in CI its absence fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Skipf(t, "%s not installed (make test installs it)", name)
	}
	return p
}

var pythonBlock = regexp.MustCompile("(?s)```python\n(.*?)```")

// The reader printed in docs/archive.md reads an archive the writer made
// (two epochs, a gap, a blob ring, a torn tail) entry for entry as the Go
// reader does: the format page is precise enough to read the bytes.
func TestPythonReader(t *testing.T) {
	python := tool(t, "python3")
	doc, err := os.ReadFile("../docs/archive.md")
	if err != nil {
		t.Fatal(err)
	}
	m := pythonBlock.FindSubmatch(doc)
	if m == nil {
		t.Fatal("no python block in docs/archive.md")
	}
	script := filepath.Join(t.TempDir(), "read.py")
	os.WriteFile(script, m[1], 0o644)

	dir := t.TempDir()
	w := openBegun(t, dir, Options{SegmentSize: MinSegmentSize}, 1)
	writeRecords(t, w, 1, 300)
	w.Gap(301, 310, 310_000)
	writeRecords(t, w, 311, 320)
	blob := Source{Geometry: Geometry{PayloadSize: 16, Flags: 0x100, Capacity: 64, ArenaSize: 1 << 12}, Ino: 9}
	w.Begin(blob, 1, 0)
	for s := uint64(1); s <= 20; s++ {
		w.Append(s, int64(s), blobRec(s))
	}
	w.Close()
	last := lastSegment(t, dir)
	f, _ := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(appendEntry(nil, KindRecord, 21, 21, blobRec(21))[:30]) // torn
	f.Close()

	var want bytes.Buffer
	r, _ := Open(dir)
	for ep := uint64(1); ep <= 2; ep++ {
		for _, e := range readAll(t, r, ep, 1) {
			fmt.Fprintf(&want, "%d %s %d %d %d %x\n", e.Epoch, e.Kind, e.Seq, e.Last, e.Time, e.Rec)
		}
	}
	out, err := exec.Command(python, script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if got := string(out); got != want.String() {
		t.Fatalf("python read:\n%s\nthe Go reader:\n%s", head(got), head(want.String()))
	}
}

func head(s string) string {
	l := strings.SplitN(s, "\n", 6)
	return strings.Join(l[:min(len(l), 5)], "\n")
}

// A compressed segment is concatenated zstd frames: the standard tool
// gives the plain segment back, byte for byte.
func TestZstdTool(t *testing.T) {
	zstd := tool(t, "zstd")
	plain, packed := t.TempDir(), t.TempDir()
	for _, d := range []struct {
		dir      string
		compress bool
	}{{plain, false}, {packed, true}} {
		w := openBegun(t, d.dir, Options{SegmentSize: 1 << 20, Compress: d.compress}, 1)
		writeRecords(t, w, 1, 40000) // a sealed segment of several blocks
		w.Close()
	}
	segs, _ := listSegments(packed)
	if !segs[0].compressed {
		t.Fatalf("segment %+v not compressed", segs[0])
	}
	out := filepath.Join(t.TempDir(), "seg")
	if b, err := exec.Command(zstd, "-q", "-d", segs[0].data(), "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("zstd -d: %v\n%s", err, b)
	}
	got, _ := os.ReadFile(out)
	psegs, _ := listSegments(plain)
	want, _ := os.ReadFile(psegs[0].data())
	// The headers differ only in their creation time (bytes 32..39) and CRC.
	if len(got) != len(want) || !bytes.Equal(got[headerSize:], want[headerSize:]) {
		t.Fatalf("zstd -d gave %d bytes, the plain segment is %d", len(got), len(want))
	}
}
