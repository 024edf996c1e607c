package shm

// Reading rings built byte by byte from compat.md §1 with encoding/binary
// only (specRing): TestReadSpecBuiltRing attaches the library's readers and
// raw slot API to them; TestTryRecvLargeBufferStaysInSlot checks that a raw
// read never copies past its record.

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// layDrain reads with TryRecv until it returns false, checking each payload.
func layDrain(t *testing.T, rd *Reader) []uint64 {
	t.Helper()
	buf := make([]byte, rd.Ring().Layout().PayloadSize())
	return drainSeqs(t, "reader", 1000, func() (uint64, bool) {
		t.Helper()
		seq, ok := rd.TryRecv(buf)
		if !ok {
			return 0, false
		}
		if seq != rd.Seq() {
			t.Errorf("TryRecv returned %d, Seq() = %d", seq, rd.Seq())
		}
		if want := specPayload(seq); !bytes.Equal(buf[:len(want)], want) {
			t.Errorf("record %d payload %q, want %q", seq, buf, want)
		}
		return seq, true
	})
}

type layReaderCase struct {
	name       string
	opts       ReadOptions
	want       []uint64
	wantLapped uint64
}

func layCheckReaders(t *testing.T, path string, cases []layReaderCase) map[string]*Reader {
	t.Helper()
	out := map[string]*Reader{}
	for _, c := range cases {
		rd := unregisteredReader(t, path, c.opts)
		got := layDrain(t, rd)
		if !slices.Equal(got, c.want) || rd.Lapped() != c.wantLapped || rd.Received() != uint64(len(c.want)) {
			t.Errorf("%s reader: got %v lapped %d received %d, want %v lapped %d",
				c.name, got, rd.Lapped(), rd.Received(), c.want, c.wantLapped)
		}
		out[c.name] = rd
	}
	return out
}

func layCheckSlot(t *testing.T, r *Ring, seq uint64, want SlotState) {
	t.Helper()
	buf := make([]byte, r.Layout().PayloadSize())
	got, err := r.ReadSlot(seq, buf)
	if err != nil {
		t.Errorf("ReadSlot(%d): %v", seq, err)
		return
	}
	if got != want {
		t.Errorf("ReadSlot(%d) = %v, want %v (slot word %d, write_seq %d)", seq, got, want, r.SlotSeq(seq), r.WriteSeq())
		return
	}
	if got == SlotReady && !bytes.Equal(buf, specPayload(seq)) {
		t.Errorf("ReadSlot(%d) payload %q", seq, buf)
	}
}

func TestReadSpecBuiltRing(t *testing.T) {
	t.Run("wrapped-with-slot-being-written", func(t *testing.T) {
		// Capacity 8, records 1..13 written (slot i holds i+8 for i <= 5,
		// 6 and 7 in slots 6 and 7), and the writer is mid-way through
		// record 14: slot 6 holds u64::MAX while write_seq is still 13.
		spec := specRing{capacity: 8, payload: 56, flags: 0x11, writeSeq: 13, slots: map[uint64]uint64{
			0: 8, 1: 9, 2: 10, 3: 11, 4: 12, 5: 13, 6: ^uint64(0), 7: 7,
		}}
		path := spec.write(t)

		r := openRing(t, path, OpenOptions{})
		h, err := r.Header()
		if err != nil {
			t.Fatal(err)
		}
		if h.ElementSize != 64 || h.Capacity != 8 || h.Mask != 7 || h.WriteSeq != 13 || h.Flags != FlagSPMC|FlagLatestWins ||
			h.SlotsOffset != 128 || h.RegistryCount != 0 || h.ArenaOffset != 0 || r.Layout().FileSize() != 128+8*64 {
			t.Errorf("header %+v", h)
		}
		if r.Oldest() != 6 || r.WriteSeq() != 13 || r.SlotSeq(14) != SlotWriting {
			t.Errorf("oldest %d write_seq %d slot(14) %#x", r.Oldest(), r.WriteSeq(), r.SlotSeq(14))
		}
		for seq, want := range map[uint64]SlotState{
			7: SlotReady, 8: SlotReady, 13: SlotReady,
			5:  SlotOverwritten, // slot 5 holds 13
			1:  SlotOverwritten,
			14: SlotNotYet, // being written (u64::MAX, write_seq < 14)
			15: SlotNotYet, // slot 7 holds 7 < 15, write_seq < 15
			21: SlotNotYet,
		} {
			layCheckSlot(t, r, seq, want)
		}
		// Record 6's slot is being overwritten by 14 (u64::MAX, write_seq
		// 13 >= 6). compat.md's reader rule reads u64::MAX as "nothing yet"
		// (retry; once 14 lands, 14 > 6 is a lap); inferring the lap at once
		// from write_seq >= 6 is equivalent on this still file. Accept both.
		if st, err := r.ReadSlot(6, make([]byte, 56)); err != nil || (st != SlotNotYet && st != SlotOverwritten) {
			t.Errorf("ReadSlot(6) on a slot being overwritten: %v %v", st, err)
		}
		if _, err := r.ReadSlot(0, make([]byte, 56)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ReadSlot(0): %v, want ErrInvalid", err)
		}

		readers := layCheckReaders(t, path, []layReaderCase{
			{"latest", ReadOptions{Start: StartLatest}, []uint64{13}, 0},
			{"head", ReadOptions{Start: StartHead}, nil, 0},
			{"seq10", ReadOptions{Start: StartSequence, Sequence: 10}, seqs(10, 13), 0},
			{"seq20", ReadOptions{Start: StartSequence, Sequence: 20}, nil, 0},
		})
		if n := readers["head"].Next(); n != 14 {
			t.Errorf("head reader wants %d, want 14", n)
		}
		if n := readers["seq20"].Next(); n != 20 {
			t.Errorf("seq20 reader wants %d, want 20", n)
		}
		// Oldest = write_seq-capacity+1 = 6, whose slot is being
		// overwritten; sequence 2 is clamped to 6 (4 counted lapped). Each
		// either waits at 6 (spec: u64::MAX is "nothing yet") or is lapped
		// past it at once and reads 7..13.
		waiting := map[string]*Reader{}
		got := map[string][]uint64{}
		for name, c := range map[string]struct {
			opts   ReadOptions
			lapped uint64 // at attach
		}{
			"oldest": {ReadOptions{Start: StartOldest}, 0},
			"seq2":   {ReadOptions{Start: StartSequence, Sequence: 2}, 4},
		} {
			rd := unregisteredReader(t, path, c.opts)
			waiting[name] = rd
			got[name] = layDrain(t, rd)
			switch {
			case len(got[name]) == 0:
				if rd.Next() != 6 || rd.Lapped() != c.lapped {
					t.Errorf("%s reader waiting at the slot being written: next %d lapped %d, want 6 and %d", name, rd.Next(), rd.Lapped(), c.lapped)
				}
			case !slices.Equal(got[name], seqs(7, 13)) || rd.Lapped() != c.lapped+1:
				t.Errorf("%s reader: got %v lapped %d, want 7..13 lapped %d (or nothing yet)", name, got[name], rd.Lapped(), c.lapped+1)
			}
		}

		// A writer taking over finishes the lap: 14 lands in slot 6 and
		// every reader waiting for it gets it.
		w := openWriter(t, path)
		if w.Next() != 14 {
			t.Fatalf("writer continues at %d, want 14", w.Next())
		}
		layPushRecs(t, w, 14, 14)
		for _, name := range []string{"latest", "head", "seq10"} {
			if got := layDrain(t, readers[name]); !slices.Equal(got, []uint64{14}) {
				t.Errorf("%s reader after write of 14: %v", name, got)
			}
		}
		// Whichever way they took at 6, the oldest readers end with 7..14
		// and exactly one more lapped record (6) than at attach.
		for name, lapped := range map[string]uint64{"oldest": 1, "seq2": 5} {
			all := append(got[name], layDrain(t, waiting[name])...)
			if !slices.Equal(all, seqs(7, 14)) || waiting[name].Lapped() != lapped {
				t.Errorf("%s reader after write of 14: got %v in all, lapped %d; want 7..14, lapped %d", name, all, waiting[name].Lapped(), lapped)
			}
		}
		layCheckSlot(t, r, 14, SlotReady)
		layCheckSlot(t, r, 6, SlotOverwritten)
		f := layRead(t, path)
		f.want64("write_seq", 32, 14)
		f.want64("slot 6 seq", 128+6*64, 14)
		f.wantBytes("slot 6 payload", 128+6*64+8, specPayload(14))
	})

	t.Run("magic-zero-is-unfinished", func(t *testing.T) {
		spec := specRing{capacity: 8, payload: 56, flags: 0x11}
		b := spec.bytes()
		le.PutUint64(b, 0)
		_, err := Open(writeRing(t, t.TempDir(), b), OpenOptions{})
		var fe *FieldError
		if !errors.Is(err, ErrMagic) || !errors.As(err, &fe) || fe.Field != "magic" {
			t.Fatalf("open with magic 0: %v", err)
		}
	})

	t.Run("sparse-with-holes", func(t *testing.T) {
		// A mirror ring (SPARSE, 0x400) of capacity 8 with write_seq 12 that
		// holds 6, 7, 9, 10, 12. Holes: 5 (slot 5 never written), 8 (slot 0
		// never written) and 11 (slot 3 still holds 3 from the first lap).
		// Slot 4 holds 12, which overwrote 4.
		spec := specRing{capacity: 8, payload: 56, flags: 0x411, writeSeq: 12, slots: map[uint64]uint64{
			0: 0, 1: 9, 2: 10, 3: 3, 4: 12, 5: 0, 6: 6, 7: 7,
		}}
		path := spec.write(t)
		r := openRing(t, path, OpenOptions{})
		if r.Layout().Flags != FlagSparse|FlagSPMC|FlagLatestWins {
			t.Errorf("flags %#x", r.Layout().Flags)
		}
		for seq, want := range map[uint64]SlotState{
			6: SlotReady, 7: SlotReady, 9: SlotReady, 10: SlotReady, 12: SlotReady,
			5: SlotHole, 8: SlotHole, 11: SlotHole,
			4:  SlotOverwritten,
			13: SlotNotYet, 16: SlotNotYet,
		} {
			layCheckSlot(t, r, seq, want)
		}
		present := []uint64{6, 7, 9, 10, 12}
		readers := layCheckReaders(t, path, []layReaderCase{
			{"oldest", ReadOptions{Start: StartOldest}, present, 3},
			// 1..4 are behind the oldest retained (5): 4 lapped, then 3 holes.
			{"seq1", ReadOptions{Start: StartSequence, Sequence: 1}, present, 7},
			{"seq8", ReadOptions{Start: StartSequence, Sequence: 8}, []uint64{9, 10, 12}, 2},
			{"latest", ReadOptions{Start: StartLatest}, []uint64{12}, 0},
			{"head", ReadOptions{Start: StartHead}, nil, 0},
		})
		for name, rd := range readers {
			// Every sequence from the start to write_seq was either
			// received or counted lapped.
			start := map[string]uint64{"oldest": 5, "seq1": 1, "seq8": 8, "latest": 12, "head": 13}[name]
			if rd.Received()+rd.Lapped() != 12-start+1 {
				t.Errorf("%s: received %d + lapped %d != %d", name, rd.Received(), rd.Lapped(), 12-start+1)
			}
		}

		// The same bytes without the SPARSE flag: a reader must wait at
		// the hole instead of skipping it.
		spec.flags = 0x11
		plain := spec.write(t)
		rd := unregisteredReader(t, plain, ReadOptions{Start: StartOldest})
		if got := layDrain(t, rd); len(got) != 0 || rd.Lapped() != 0 || rd.Next() != 5 {
			t.Errorf("non-sparse reader at a hole: got %v lapped %d next %d", got, rd.Lapped(), rd.Next())
		}

		// A mirror writer leaves a new gap (13, 14) with Store + Publish;
		// the waiting readers skip it and count it.
		w := openWriter(t, path)
		if err := w.Store(15, specPayload(15)); err != nil {
			t.Fatal(err)
		}
		if err := w.Publish(15); err != nil {
			t.Fatal(err)
		}
		for name, before := range map[string]uint64{"oldest": 3, "latest": 0, "head": 0} {
			rd := readers[name]
			if got := layDrain(t, rd); !slices.Equal(got, []uint64{15}) || rd.Lapped() != before+2 {
				t.Errorf("%s after gap 13..14: got %v lapped %d, want [15] lapped %d", name, got, rd.Lapped(), before+2)
			}
		}
		layCheckSlot(t, r, 13, SlotHole)
		layCheckSlot(t, r, 14, SlotHole)
		layCheckSlot(t, r, 15, SlotReady)
	})
}

// TestTryRecvLargeBufferStaysInSlot: Reader.TryRecv is documented to copy
// "up to len(dst) bytes" of the record's payload. A dst longer than the
// payload must receive the payload and nothing else: the bytes after it are
// the next slot (or the end of the mapping), not part of the record.
// A copy of len(dst) bytes from the slot would run past its end; with a
// large dst on the last slot it reads past the mapping and the process
// dies of SIGSEGV.
func TestTryRecvLargeBufferStaysInSlot(t *testing.T) {
	w, path := createRing(t, RingConfig{PayloadSize: 56, Capacity: 4})
	layPushRecs(t, w, 1, 2)
	rd := unregisteredReader(t, path, ReadOptions{Start: StartOldest})
	buf := bytes.Repeat([]byte{0xEE}, 64+8)
	seq, ok := rd.TryRecv(buf)
	if !ok || seq != 1 {
		t.Fatalf("TryRecv: %d %v", seq, ok)
	}
	if !bytes.Equal(buf[:56], specPayload(1)) {
		t.Fatalf("payload %q", buf[:56])
	}
	if tail := buf[56:]; !bytes.Equal(tail, bytes.Repeat([]byte{0xEE}, len(tail))) {
		t.Errorf("TryRecv with a %d-byte dst on a 56-byte payload wrote %d bytes past the record: % x "+
			"(the next slot's sequence word and payload): dst must be clamped to PayloadSize as ReadSlot does, "+
			"or the last slot reads past the end of the mapping",
			len(buf), len(tail), tail[:16])
	}
}
