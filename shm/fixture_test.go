package shm

// TestForeignFixtureRing attaches the library to a ring written by the
// reference implementation's Python producer (testdata, see its README.md) and checks everything the README states about it.

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"
)

const fxRingName = "ring-py-fixed-16x56.bin"

// fxWant is record seq of the fixture (a tick: seq, value 3*seq, text).
func fxWant(seq uint64) tick {
	r := tick{Seq: seq, Value: 3 * seq}
	copy(r.Text[:], fmt.Sprintf("record-%02d", seq))
	return r
}

// fxDrain receives from c until it runs dry, checking each record whole.
func fxDrain(t *testing.T, name string, c *Consumer[tick]) []uint64 {
	t.Helper()
	var v tick
	return drainSeqs(t, name+" reader", 100, func() (uint64, bool) {
		t.Helper()
		if !c.TryRecv(&v) {
			return 0, false
		}
		if v != fxWant(v.Seq) || v.Seq != c.Seq() {
			t.Errorf("%s reader: record at seq %d is %+v (text %q), want %+v", name, c.Seq(), v, bytes.TrimRight(v.Text[:], "\x00"), fxWant(c.Seq()))
		}
		return v.Seq, true
	})
}

func TestForeignFixtureRing(t *testing.T) {
	path, orig := fixtureCopy(t, fxRingName)

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 1152 {
		t.Fatalf("fixture size %d, README says 1152", st.Size())
	}

	r := openRing(t, path, OpenOptions{})
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
	oldest := consumer[tick](t, path, ReadOptions{Start: StartOldest})
	if got := fxDrain(t, "oldest", oldest); !slices.Equal(got, seqs(5, 20)) || oldest.Lapped() != 0 {
		t.Errorf("oldest reader got %v lapped %d, want 5..20 lapped 0", got, oldest.Lapped())
	}
	seq1 := consumer[tick](t, path, ReadOptions{Start: StartSequence, Sequence: 1, NoRegister: true})
	if got := fxDrain(t, "sequence 1", seq1); !slices.Equal(got, seqs(5, 20)) || seq1.Lapped() != 4 {
		t.Errorf("sequence(1) reader got %v lapped %d, want 5..20 lapped 4", got, seq1.Lapped())
	}
	latest := consumer[tick](t, path, ReadOptions{Start: StartLatest})
	if got := fxDrain(t, "latest", latest); !slices.Equal(got, []uint64{20}) || latest.Lapped() != 0 {
		t.Errorf("latest reader got %v lapped %d, want [20]", got, latest.Lapped())
	}
	head := consumer[tick](t, path, ReadOptions{Start: StartHead, NoRegister: true})
	var v tick
	if head.TryRecv(&v) {
		t.Fatalf("head reader got %+v before record 21 was written", v)
	}
	if head.Reader().Next() != 21 {
		t.Errorf("head reader wants %d, want 21", head.Reader().Next())
	}

	// Write record 21 through our writer on the copy: it lands in slot 5
	// (overwriting 5) in the Python producer's layout.
	w := openWriter(t, path)
	if w.Next() != 21 {
		t.Fatalf("writer continues at %d, want 21", w.Next())
	}
	rec := fxWant(21)
	if s, err := w.Push(bytesOf(&rec)); err != nil || s != 21 {
		t.Fatalf("push 21: %d %v", s, err)
	}
	if got := fxDrain(t, "head", head); !slices.Equal(got, []uint64{21}) || head.Lapped() != 0 {
		t.Errorf("head reader got %v lapped %d after the write, want [21]", got, head.Lapped())
	}
	for name, c := range map[string]*Consumer[tick]{"oldest": oldest, "sequence 1": seq1, "latest": latest} {
		if got := fxDrain(t, name, c); !slices.Equal(got, []uint64{21}) {
			t.Errorf("%s reader got %v after the write, want [21]", name, got)
		}
	}
	// A fresh oldest reader now gets 6..21.
	if got := fxDrain(t, "oldest after 21", consumer[tick](t, path, ReadOptions{Start: StartOldest, NoRegister: true})); !slices.Equal(got, seqs(6, 21)) {
		t.Errorf("oldest reader after 21: %v, want 6..21", got)
	}
	if st, _ := r.ReadSlot(5, buf); st != SlotOverwritten {
		t.Errorf("ReadSlot(5) after 21: %v", st)
	}

	// Raw bytes: write_seq 21, slot 5 = seq 21 + record; everything else
	// is byte-identical to the original fixture.
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(orig)
	le.PutUint64(want[32:], 21)
	le.PutUint64(want[128+5*64:], 21)
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
