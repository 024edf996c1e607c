package replica

// Fuzz target of the sequencer.

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// fzSink checks what a sequencer writes: strictly increasing, never below
// a skip, each slot carrying its own sequence.
type fzSink struct {
	t     *testing.T
	floor uint64 // lowest sequence allowed next
	n     uint64
}

func (k *fzSink) write(seq uint64, slot, _ []byte) error {
	if seq < k.floor {
		k.t.Fatalf("wrote %d, below %d (reordered, duplicated or skipped)", seq, k.floor)
	}
	if got := binary.LittleEndian.Uint64(slot); got != seq {
		k.t.Fatalf("slot of %d carries %d", seq, got)
	}
	k.floor, k.n = seq+1, k.n+1
	return nil
}

func (k *fzSink) skip(next uint64) { k.floor = max(k.floor, next) }

// FuzzSequencer feeds a program of frames, gaps, heartbeats and NAK polls
// to a sequencer. Each op is 3 bytes: op, offset from next (signed), count.
func FuzzSequencer(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 8, 4, 0, 4, 4, 3, 20, 0, 5, 0, 0})
	f.Add([]byte{1, 5, 3, 0, 0, 2, 2, 30, 0, 0, 1, 1, 4, 3, 0, 1, 0, 9})
	f.Add([]byte{6, 0, 0, 0, 40, 1, 0, 20, 1, 4, 0, 0, 0, 0, 255, 2, 10, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		k := &fzSink{t: t, floor: 1}
		st := &MirrorStats{}
		s := newSequencer(sqShape, 1, k, st)
		s.maxHeld = 8
		now := time.Unix(0, 0)
		top := uint64(0) // highest sequence any frame carried
		for ; len(prog) >= 3; prog = prog[3:] {
			op, off, n := prog[0], int64(int8(prog[1])), int(prog[2])
			at := uint64(max(1, int64(s.next)+off))
			switch op % 8 {
			case 0, 1, 2: // datagram
				h, p := sqFrame(at, 1+n%16)
				top = max(top, at+uint64(h.Count)-1)
				if err := s.data(h, p, false); err != nil {
					t.Fatal(err)
				}
			case 3: // TCP frame
				h, p := sqFrame(at, 1+n%16)
				top = max(top, at+uint64(h.Count)-1)
				if err := s.data(h, p, true); err != nil {
					t.Fatal(err)
				}
			case 4:
				if err := s.gap(at); err != nil {
					t.Fatal(err)
				}
			case 5:
				s.heartbeat(at)
			case 6:
				now = now.Add(time.Duration(n) * time.Millisecond)
				if first, last, ok := s.wantNak(now); ok {
					h := wire.Header{Kind: wire.KindNak, Len: wire.NakSize, Seq: first}
					if _, _, err := wire.ParseNak(h, binary.LittleEndian.AppendUint64(nil, last)); err != nil || first != s.next {
						t.Fatalf("NAK %d..%d at next %d: %v", first, last, s.next, err)
					}
				}
			case 7:
				s.suppressNaks = n&1 != 0
			}
			if len(s.held) > s.maxHeld {
				t.Fatalf("%d frames held, limit %d", len(s.held), s.maxHeld)
			}
			for i := range s.held {
				if s.held[i].h.Seq <= s.next || (i > 0 && s.held[i].h.Seq <= s.held[i-1].h.Seq) {
					t.Fatalf("held frame %d at %d, next %d", i, s.held[i].h.Seq, s.next)
				}
			}
		}
		if st.Records != k.n || s.next != k.floor {
			t.Fatalf("stats %+v, sink wrote %d up to %d, next %d", st, k.n, k.floor, s.next)
		}
		// What is still missing comes over TCP: the mirror catches up.
		for s.next <= top {
			h, p := sqFrame(s.next, int(min(top-s.next+1, 1000)))
			if err := s.data(h, p, true); err != nil {
				t.Fatal(err)
			}
		}
		if s.next != max(top+1, k.floor) || len(s.held) != 0 {
			t.Fatalf("next %d after the catch-up to %d, %d held", s.next, top, len(s.held))
		}
	})
}
