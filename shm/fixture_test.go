package shm

// TestForeignFixtureRing attaches the library to a ring written by the
// reference implementation's Python producer (shared/fixtures, see its
// README.md) and checks everything the README states about it.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

const fxRingName = "ring-py-fixed-16x56.bin"

// fxDir is shared/fixtures relative to the package directory (go test runs
// in shm/; the repository sits beside shared/).
func fxDir() string { return filepath.Join("..", "..", "shared", "fixtures") }

// fxCopy copies a read-only fixture into a temp dir so the test can map it
// read-write. It skips (with the reason) only when the fixture is missing.
func fxCopy(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(fxDir(), name)
	in, err := os.Open(src)
	if os.IsNotExist(err) {
		t.Skipf("foreign fixture %s not found (looked in %s, relative to the package dir); skipping", name, fxDir())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// fxRec is the fixture's record: seq u64 @0, value u64 @8, text [40]byte @16.
type fxRec struct {
	Seq   uint64
	Value uint64
	Text  [40]byte
}

func fxWant(seq uint64) fxRec {
	r := fxRec{Seq: seq, Value: 3 * seq}
	copy(r.Text[:], fmt.Sprintf("record-%02d", seq))
	return r
}

func fxDrain(t *testing.T, name string, c *Consumer[fxRec]) []uint64 {
	t.Helper()
	var got []uint64
	for range 100 {
		var v fxRec
		if !c.TryRecv(&v) {
			return got
		}
		if v != fxWant(v.Seq) || v.Seq != c.Seq() {
			t.Errorf("%s reader: record at seq %d is %+v (text %q), want %+v", name, c.Seq(), v, bytes.TrimRight(v.Text[:], "\x00"), fxWant(c.Seq()))
		}
		got = append(got, v.Seq)
	}
	t.Fatalf("%s reader never ran dry", name)
	return nil
}

func fxSeqs(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func fxEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func fxConsumer(t *testing.T, path string, opts ReadOptions) *Consumer[fxRec] {
	t.Helper()
	c, err := NewConsumer[fxRec](path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestForeignFixtureRing(t *testing.T) {
	path := fxCopy(t, fxRingName)

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 1152 {
		t.Fatalf("fixture size %d, README says 1152", st.Size())
	}

	r, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Header()
	if err != nil {
		t.Fatal(err)
	}
	// Geometry: capacity 16, 56-byte records, stride 64, SPMC|LATEST_WINS,
	// slots at 128, no registry, no arena, write_seq 20.
	if h.Magic != Magic || h.Version != 2 || h.Capacity != 16 || h.Mask != 15 || h.ElementSize != 64 ||
		r.Layout().PayloadSize() != 56 || h.Flags != 0x11 || FlagSPMC|FlagLatestWins != 0x11 ||
		h.SlotsOffset != 128 || h.RegistryCount != 0 || h.ArenaOffset != 0 || h.ArenaSize != 0 ||
		h.WriteSeq != 20 || r.WriteSeq() != 20 || r.Layout().FileSize() != 1152 {
		t.Fatalf("fixture header %+v", h)
	}
	if r.Oldest() != 5 {
		t.Errorf("oldest %d, want 5", r.Oldest())
	}
	// Slot i holds i+16 for i = 0..4 and i for i = 5..15.
	for i := uint64(0); i < 16; i++ {
		want := i
		if i < 5 {
			want = i + 16
		}
		if got := r.SlotSeq(i); got != want {
			t.Errorf("slot %d holds %d, want %d", i, got, want)
		}
	}
	if rs, err := r.Readers(); err != nil || len(rs) != 0 {
		t.Errorf("Readers() = %v, %v on a ring without registry", rs, err)
	}
	buf := make([]byte, 56)
	for seq := uint64(1); seq <= 22; seq++ {
		want := SlotReady
		switch {
		case seq < 5:
			want = SlotOverwritten
		case seq > 20:
			want = SlotNotYet
		}
		st, err := r.ReadSlot(seq, buf)
		if err != nil || st != want {
			t.Errorf("ReadSlot(%d) = %v, %v; want %v", seq, st, err, want)
			continue
		}
		if st == SlotReady {
			w := fxWant(seq)
			if !bytes.Equal(buf, bytesOf(&w)) {
				t.Errorf("ReadSlot(%d) payload %q", seq, buf)
			}
		}
	}

	// Readers: "oldest" gets 5..20; sequence 1 gets 5..20 with 4 lapped;
	// "latest" starts at 20; "head" waits for 21. Register=false and true
	// (the ring has no registry: both read the same).
	oldest := fxConsumer(t, path, ReadOptions{Start: StartOldest})
	if got := fxDrain(t, "oldest", oldest); !fxEqual(got, fxSeqs(5, 20)) || oldest.Lapped() != 0 {
		t.Errorf("oldest reader got %v lapped %d, want 5..20 lapped 0", got, oldest.Lapped())
	}
	seq1 := fxConsumer(t, path, ReadOptions{Start: StartSequence, Sequence: 1, NoRegister: true})
	if got := fxDrain(t, "sequence 1", seq1); !fxEqual(got, fxSeqs(5, 20)) || seq1.Lapped() != 4 {
		t.Errorf("sequence(1) reader got %v lapped %d, want 5..20 lapped 4", got, seq1.Lapped())
	}
	latest := fxConsumer(t, path, ReadOptions{Start: StartLatest})
	if got := fxDrain(t, "latest", latest); !fxEqual(got, []uint64{20}) || latest.Lapped() != 0 {
		t.Errorf("latest reader got %v lapped %d, want [20]", got, latest.Lapped())
	}
	head := fxConsumer(t, path, ReadOptions{Start: StartHead, NoRegister: true})
	var v fxRec
	if head.TryRecv(&v) {
		t.Fatalf("head reader got %+v before record 21 was written", v)
	}
	if head.Reader().Next() != 21 {
		t.Errorf("head reader wants %d, want 21", head.Reader().Next())
	}

	// Write record 21 through our writer on the copy: it lands in slot 5
	// (overwriting 5) in the Python producer's layout.
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Next() != 21 {
		t.Fatalf("writer continues at %d, want 21", w.Next())
	}
	rec := fxWant(21)
	if s, err := w.Push(bytesOf(&rec)); err != nil || s != 21 {
		t.Fatalf("push 21: %d %v", s, err)
	}
	if got := fxDrain(t, "head", head); !fxEqual(got, []uint64{21}) || head.Lapped() != 0 {
		t.Errorf("head reader got %v lapped %d after the write, want [21]", got, head.Lapped())
	}
	for name, c := range map[string]*Consumer[fxRec]{"oldest": oldest, "sequence 1": seq1, "latest": latest} {
		if got := fxDrain(t, name, c); !fxEqual(got, []uint64{21}) {
			t.Errorf("%s reader got %v after the write, want [21]", name, got)
		}
	}
	// A fresh oldest reader now gets 6..21.
	if got := fxDrain(t, "oldest after 21", fxConsumer(t, path, ReadOptions{Start: StartOldest, NoRegister: true})); !fxEqual(got, fxSeqs(6, 21)) {
		t.Errorf("oldest reader after 21: %v, want 6..21", got)
	}
	if st, _ := r.ReadSlot(5, buf); st != SlotOverwritten {
		t.Errorf("ReadSlot(5) after 21: %v", st)
	}

	// Raw bytes: write_seq 21, slot 5 = seq 21 + record; everything else
	// is byte-identical to the original fixture.
	orig, err := os.ReadFile(filepath.Join(fxDir(), fxRingName))
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(orig)
	layLE.PutUint64(want[32:], 21)
	layLE.PutUint64(want[128+5*64:], 21)
	copy(want[128+5*64+8:], bytesOf(&rec))
	if !bytes.Equal(now, want) {
		for i := range now {
			if now[i] != want[i] {
				t.Errorf("after writing 21 the file differs from the expected bytes first at offset %d: %#x, want %#x", i, now[i], want[i])
				break
			}
		}
	}
}
