package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// A GAP within what the source announced is applied at once; one past it
// waits for a record or heartbeat that backs it (then it is applied, with
// the records held meanwhile), and is a protocol error when nothing backs
// it for the wait.
func TestSequencerGapPastAnnounced(t *testing.T) {
	s, k, st := newSQ(t, 1)
	t0 := time.Unix(1000, 0)
	sqData(t, s, 1, 5, true)
	s.heartbeat(8)
	if err := s.gapFrom(9); err != nil || s.next != 9 || st.Gaps != 3 {
		t.Fatalf("a GAP to the one after the heartbeat: %v, next %d, gaps %d", err, s.next, st.Gaps)
	}
	// Past the heartbeat: held.
	if err := s.gapFrom(100); err != nil || s.next != 9 || s.pendingGap != 100 {
		t.Fatalf("a GAP past the heartbeat: %v, next %d, pending %d", err, s.next, s.pendingGap)
	}
	if err := s.pendingGapDue(t0, time.Second); err != nil || s.next != 9 {
		t.Fatalf("unbacked at first: %v, next %d", err, s.next)
	}
	// Backed by the record it names, which is held until the GAP applies.
	sqData(t, s, 100, 2, true)
	if s.next != 9 || len(s.held) != 1 {
		t.Fatalf("the backing record: next %d, %d held", s.next, len(s.held))
	}
	if err := s.pendingGapDue(t0.Add(time.Millisecond), time.Second); err != nil || s.next != 102 || s.pendingGap != 0 {
		t.Fatalf("backed: %v, next %d, pending %d", err, s.next, s.pendingGap)
	}
	if got := k.seqs[len(k.seqs)-2:]; got[0] != 100 || got[1] != 101 || st.Gaps != 3+91 {
		t.Fatalf("wrote %v, gaps %d", k.seqs, st.Gaps)
	}
	// Past what was announced, and never backed.
	if err := s.gapFrom(1<<64 - 2); err != nil {
		t.Fatal(err)
	}
	s.heartbeat(101)
	if err := s.pendingGapDue(t0.Add(2*time.Second), time.Second); err != nil {
		t.Fatalf("within the wait: %v", err)
	}
	err := s.pendingGapDue(t0.Add(3*time.Second+time.Millisecond), time.Second)
	if !errors.Is(err, wire.ErrMalformed) || s.next != 102 {
		t.Fatalf("unbacked past the wait: %v, next %d; want wire.ErrMalformed, next 102", err, s.next)
	}
}
