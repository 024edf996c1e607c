package replica

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// sqSink is a fake recordSink: it records what the sequencer writes and
// checks each slot carries its own sequence.
type sqSink struct {
	seqs  []uint64
	skips []uint64
	err   error // returned by write when set
}

func (k *sqSink) write(seq uint64, slot, blob []byte) error {
	if k.err != nil {
		return k.err
	}
	if got := binary.LittleEndian.Uint64(slot); got != seq {
		return fmt.Errorf("slot for %d carries %d", seq, got)
	}
	k.seqs = append(k.seqs, seq)
	return nil
}

func (k *sqSink) skip(next uint64) { k.skips = append(k.skips, next) }

const sqPayload = 16

var sqShape = wire.Shape{Payload: sqPayload}

// sqFrame builds a DATA frame of records first..first+count-1, each slot
// starting with its sequence.
func sqFrame(first uint64, count int) (wire.Header, []byte) {
	p := make([]byte, count*sqPayload)
	for i := range count {
		binary.LittleEndian.PutUint64(p[i*sqPayload:], first+uint64(i))
	}
	return wire.Header{Kind: wire.KindData, Count: uint16(count), Len: uint32(len(p)), Seq: first}, p
}

func newSQ(t *testing.T, next uint64) (*sequencer, *sqSink, *MirrorStats) {
	t.Helper()
	k, st := &sqSink{}, &MirrorStats{}
	return newSequencer(sqShape, next, k, st), k, st
}

func sqData(t *testing.T, s *sequencer, first uint64, count int, viaTCP bool) {
	t.Helper()
	h, p := sqFrame(first, count)
	if err := sqShape.CheckData(h, p); err != nil {
		t.Fatal(err)
	}
	if err := s.data(h, p, viaTCP); err != nil {
		t.Fatal(err)
	}
}

// sqWant checks the sink received exactly first..last in order.
func sqWant(t *testing.T, k *sqSink, first, last uint64) {
	t.Helper()
	if uint64(len(k.seqs)) != last-first+1 {
		t.Fatalf("wrote %d records, want %d..%d: %v", len(k.seqs), first, last, k.seqs)
	}
	for i, seq := range k.seqs {
		if seq != first+uint64(i) {
			t.Fatalf("record %d is %d, want %d (%v)", i, seq, first+uint64(i), k.seqs)
		}
	}
}

func TestSequencerInOrder(t *testing.T) {
	s, k, st := newSQ(t, 1)
	for first := uint64(1); first < 100; first += 9 {
		sqData(t, s, first, 9, false)
	}
	sqWant(t, k, 1, 99)
	if s.next != 100 || st.Records != 99 || len(s.held) != 0 || st.Duplicates+st.Stale != 0 {
		t.Fatalf("next %d, stats %+v", s.next, st)
	}
	if _, _, ok := s.wantNak(time.Now()); ok {
		t.Fatal("NAK without a hole")
	}
}

func TestSequencerHoleThenDrain(t *testing.T) {
	s, k, st := newSQ(t, 1)
	sqData(t, s, 1, 4, false)  // 1..4
	sqData(t, s, 13, 4, false) // 13..16 held
	sqData(t, s, 9, 4, false)  // 9..12 held
	sqData(t, s, 17, 2, false) // 17..18 held
	sqWant(t, k, 1, 4)
	if len(s.held) != 3 || s.held[0].h.Seq != 9 || s.held[1].h.Seq != 13 || s.held[2].h.Seq != 17 {
		t.Fatalf("held %v", s.held)
	}
	first, last, ok := s.wantNak(time.Now())
	if !ok || first != 5 || last != 8 {
		t.Fatalf("NAK %d..%d %v, want 5..8", first, last, ok)
	}
	sqData(t, s, 5, 4, true) // the retransmission fills the hole
	sqWant(t, k, 1, 18)
	if len(s.held) != 0 || s.next != 19 || st.Retransmitted != 4 || s.nakOut {
		t.Fatalf("held %d next %d nakOut %v stats %+v", len(s.held), s.next, s.nakOut, st)
	}
	// A frame overlapping the written part writes only its new records.
	sqData(t, s, 15, 8, false)
	sqWant(t, k, 1, 22)
}

func TestSequencerDuplicatesAndStale(t *testing.T) {
	s, k, st := newSQ(t, 1)
	sqData(t, s, 1, 5, false)
	sqData(t, s, 1, 5, false) // duplicate datagram
	sqData(t, s, 3, 2, true)  // stale TCP frame
	if st.Duplicates != 1 || st.Stale != 1 {
		t.Fatalf("stats %+v", st)
	}
	sqData(t, s, 10, 2, false)
	sqData(t, s, 10, 2, false) // the same held frame again
	if st.Duplicates != 2 || len(s.held) != 1 {
		t.Fatalf("held %d, stats %+v", len(s.held), st)
	}
	sqData(t, s, 12, 3, false) // 12..14 held
	sqData(t, s, 6, 6, true)   // 6..11 overtakes the held 10..11
	sqWant(t, k, 1, 14)
	if st.Stale != 2 || len(s.held) != 0 {
		t.Fatalf("held %d, stats %+v", len(s.held), st)
	}
}

func TestSequencerOverflow(t *testing.T) {
	s, k, st := newSQ(t, 1)
	s.maxHeld = 4
	for i := range 6 {
		sqData(t, s, 10+uint64(i)*2, 2, false)
	}
	if len(s.held) != 4 || st.Overflow != 2 {
		t.Fatalf("held %d, stats %+v", len(s.held), st)
	}
	sqData(t, s, 1, 9, true)
	sqWant(t, k, 1, 17) // 10..17 were held; 18..21 overflowed
	first, last, ok := s.wantNak(time.Now())
	if ok {
		t.Fatalf("NAK %d..%d with nothing held and no heartbeat", first, last)
	}
	s.heartbeat(21)
	if first, last, ok = s.wantNak(time.Now()); !ok || first != 18 || last != 21 {
		t.Fatalf("NAK %d..%d %v, want 18..21", first, last, ok)
	}
	if MaxHeld != 8192 || newSequencer(sqShape, 1, k, st).maxHeld != MaxHeld {
		t.Fatalf("MaxHeld %d", MaxHeld)
	}
}

func TestSequencerGap(t *testing.T) {
	s, k, st := newSQ(t, 1)
	sqData(t, s, 1, 2, false)
	sqData(t, s, 5, 2, false)  // 5..6 held, below the gap
	sqData(t, s, 9, 4, false)  // 9..12 held, straddles the gap
	sqData(t, s, 20, 1, false) // 20 held, above it
	if err := s.gap(11); err != nil {
		t.Fatal(err)
	}
	if len(k.skips) != 1 || k.skips[0] != 11 || st.Gaps != 8 {
		t.Fatalf("skips %v stats %+v", k.skips, st)
	}
	want := []uint64{1, 2, 11, 12}
	if fmt.Sprint(k.seqs) != fmt.Sprint(want) {
		t.Fatalf("wrote %v, want %v", k.seqs, want)
	}
	if s.next != 13 || len(s.held) != 1 || s.held[0].h.Seq != 20 || st.Stale != 1 {
		t.Fatalf("next %d held %d stats %+v", s.next, len(s.held), st)
	}
	if err := s.gap(5); err != nil || s.next != 13 || len(k.skips) != 1 {
		t.Fatalf("a gap behind next moved it: next %d, %v", s.next, err)
	}
	if err := s.gap(21); err != nil || s.next != 21 || st.Gaps != 16 {
		t.Fatalf("gap over the held frame: next %d stats %+v", s.next, st)
	}
	if fmt.Sprint(k.seqs[len(k.seqs)-1]) != "12" || len(s.held) != 0 || st.Stale != 2 {
		t.Fatalf("wrote %v, held %d", k.seqs, len(s.held))
	}
}

func TestSequencerWantNak(t *testing.T) {
	s, _, st := newSQ(t, 1)
	now := time.Unix(1000, 0)
	sqData(t, s, 1, 2, false)
	s.heartbeat(2) // everything sent arrived
	if _, _, ok := s.wantNak(now); ok {
		t.Fatal("NAK although the heartbeat is behind next")
	}
	s.heartbeat(3) // record 3 was sent and lost
	first, last, ok := s.wantNak(now)
	if !ok || first != 3 || last != 3 {
		t.Fatalf("heartbeat at next: NAK %d..%d %v", first, last, ok)
	}
	s.heartbeat(9)
	if _, _, ok := s.wantNak(now.Add(NakRepeat - time.Millisecond)); ok {
		t.Fatal("second NAK while one is outstanding")
	}
	first, last, ok = s.wantNak(now.Add(NakRepeat))
	if !ok || first != 3 || last != 9 || st.NaksSent != 2 {
		t.Fatalf("repeat: NAK %d..%d %v, stats %+v", first, last, ok, st)
	}
	// Answered up to the NAK's end: the next hole is NAKed at once.
	sqData(t, s, 3, 7, true)
	s.heartbeat(12)
	if first, last, ok = s.wantNak(now.Add(NakRepeat + time.Microsecond)); !ok || first != 10 || last != 12 {
		t.Fatalf("after the answer: NAK %d..%d %v", first, last, ok)
	}

	// Capped at the record limit, starting at next.
	s, _, _ = newSQ(t, 1)
	sqData(t, s, 1+wire.MaxNakRecords+500, 1, false)
	if first, last, ok = s.wantNak(now); !ok || first != 1 || last != wire.MaxNakRecords {
		t.Fatalf("wide hole: NAK %d..%d %v", first, last, ok)
	}
	s, _, _ = newSQ(t, 1)
	s.nakRecordLimit = 10
	s.heartbeat(100)
	if first, last, ok = s.wantNak(now); !ok || first != 1 || last != 10 {
		t.Fatalf("limit 10: NAK %d..%d %v", first, last, ok)
	}

	// Suppressed while a TCP catch-up fills the holes.
	s, _, _ = newSQ(t, 1)
	s.suppressNaks = true
	sqData(t, s, 50, 1, false)
	s.heartbeat(60)
	if _, _, ok := s.wantNak(now); ok {
		t.Fatal("NAK while suppressed")
	}
	s.suppressNaks = false
	if first, last, ok = s.wantNak(now); !ok || first != 1 || last != 49 {
		t.Fatalf("after the catch-up: NAK %d..%d %v", first, last, ok)
	}
}

func TestSequencerLag(t *testing.T) {
	s, _, _ := newSQ(t, 1)
	if s.lag() != 0 {
		t.Fatalf("lag %d at start", s.lag())
	}
	sqData(t, s, 1, 5, false)
	if s.lag() != 0 {
		t.Fatalf("lag %d when caught up", s.lag())
	}
	s.heartbeat(8)
	if s.lag() != 3 {
		t.Fatalf("lag %d, want 3 (6..8)", s.lag())
	}
	sqData(t, s, 20, 5, false) // seen 24
	if s.lag() != 19 {
		t.Fatalf("lag %d, want 19 (6..24)", s.lag())
	}
	if err := s.gap(30); err != nil || s.lag() != 0 {
		t.Fatalf("lag %d after a gap past everything seen, %v", s.lag(), err)
	}
}

func TestSequencerSinkError(t *testing.T) {
	s, k, _ := newSQ(t, 1)
	sqData(t, s, 3, 2, false)
	k.err = fmt.Errorf("disk full")
	h, p := sqFrame(1, 2)
	if err := s.data(h, p, true); err == nil {
		t.Fatal("a write error was swallowed")
	}
	if s.next != 1 {
		t.Fatalf("next moved to %d past a failed write", s.next)
	}
}

// TestSequencerWaitsForQueuedDatagrams: a hole only a heartbeat shows is
// not NAKed while the last receive filled its batch (the datagrams may
// still be queued here: a TCP heartbeat overtakes them), until the queue
// was drained or NakRepeat passed; a hole a held frame shows is real and
// NAKed at once.
func TestSequencerWaitsForQueuedDatagrams(t *testing.T) {
	s, _, _ := newSQ(t, 1)
	now := time.Unix(1000, 0)
	sqData(t, s, 1, 2, false)
	s.heartbeat(9)
	s.queued = true
	if _, _, ok := s.wantNak(now); ok {
		t.Fatal("NAK for records that may still be queued")
	}
	if _, _, ok := s.wantNak(now.Add(NakRepeat - time.Millisecond)); ok {
		t.Fatal("NAK before NakRepeat while the queue stays full")
	}
	if first, last, ok := s.wantNak(now.Add(NakRepeat)); !ok || first != 3 || last != 9 {
		t.Fatalf("after NakRepeat: NAK %d..%d %v", first, last, ok)
	}

	s, _, _ = newSQ(t, 1)
	sqData(t, s, 1, 2, false)
	s.heartbeat(9)
	s.queued = true
	if _, _, ok := s.wantNak(now); ok {
		t.Fatal("NAK for records that may still be queued")
	}
	s.queued = false // the queue drained, the hole stays
	if first, last, ok := s.wantNak(now.Add(time.Microsecond)); !ok || first != 3 || last != 9 {
		t.Fatalf("after the queue drained: NAK %d..%d %v", first, last, ok)
	}

	// Records still arriving move the hole: its NakRepeat starts again,
	// so a long stream behind a TCP heartbeat is not NAKed while queued.
	s, _, _ = newSQ(t, 1)
	sqData(t, s, 1, 2, false)
	s.heartbeat(9)
	s.queued = true
	if _, _, ok := s.wantNak(now); ok {
		t.Fatal("NAK for records that may still be queued")
	}
	sqData(t, s, 3, 2, false) // they were queued: the hole is now 5..9
	if _, _, ok := s.wantNak(now.Add(NakRepeat)); ok {
		t.Fatal("NAK for a hole that moved NakRepeat after the first one was seen")
	}
	if first, last, ok := s.wantNak(now.Add(2 * NakRepeat)); !ok || first != 5 || last != 9 {
		t.Fatalf("the moved hole after its own NakRepeat: NAK %d..%d %v", first, last, ok)
	}

	s, _, _ = newSQ(t, 1)
	sqData(t, s, 1, 2, false)
	sqData(t, s, 6, 2, false) // held: 3..5 were lost on the way
	s.queued = true
	if first, last, ok := s.wantNak(now); !ok || first != 3 || last != 5 {
		t.Fatalf("a hole behind a held frame: NAK %d..%d %v", first, last, ok)
	}
}

// sqWithholder is a transport's Withholder that counts the questions.
type sqWithholder struct {
	held  bool
	asked int
}

func (w *sqWithholder) Withheld() bool { w.asked++; return w.held }

// TestSequencerWaitsForWithheldDatagrams: a hole only a heartbeat shows is
// not NAKed while the transport holds datagrams back, at most NakRepeat;
// the transport is asked only when such a hole waits, never for a hole a
// held frame shows or when there is none.
func TestSequencerWaitsForWithheldDatagrams(t *testing.T) {
	now := time.Unix(1000, 0)
	s, _, _ := newSQ(t, 1)
	w := &sqWithholder{held: true}
	s.withholder = w
	sqData(t, s, 1, 2, false)
	if _, _, ok := s.wantNak(now); ok || w.asked != 0 {
		t.Fatalf("no hole: NAK %v, transport asked %d times", ok, w.asked)
	}
	s.heartbeat(9)
	if _, _, ok := s.wantNak(now); ok || w.asked != 1 {
		t.Fatalf("a hole while the transport holds datagrams back: NAK %v (asked %d)", ok, w.asked)
	}
	if first, last, ok := s.wantNak(now.Add(NakRepeat)); !ok || first != 3 || last != 9 {
		t.Fatalf("after NakRepeat: NAK %d..%d %v", first, last, ok)
	}

	s, _, _ = newSQ(t, 1)
	w = &sqWithholder{held: true}
	s.withholder = w
	sqData(t, s, 1, 2, false)
	s.heartbeat(9)
	if _, _, ok := s.wantNak(now); ok {
		t.Fatal("NAK while the transport holds datagrams back")
	}
	w.held = false // the block retired without them: they are lost
	if first, last, ok := s.wantNak(now.Add(time.Microsecond)); !ok || first != 3 || last != 9 {
		t.Fatalf("once nothing is held back: NAK %d..%d %v", first, last, ok)
	}

	s, _, _ = newSQ(t, 1)
	w = &sqWithholder{held: true}
	s.withholder = w
	sqData(t, s, 1, 2, false)
	sqData(t, s, 6, 2, false) // held: 3..5 were lost on the way
	if first, last, ok := s.wantNak(now); !ok || first != 3 || last != 5 || w.asked != 0 {
		t.Fatalf("a hole behind a held frame: NAK %d..%d %v, transport asked %d times", first, last, ok, w.asked)
	}
}
