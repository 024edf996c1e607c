package shm

import (
	"fmt"
	"runtime"
	"time"
)

// SlotState is what ReadSlot found in the slot of the wanted sequence.
type SlotState int

const (
	// SlotReady: the slot held the wanted record and dst has a consistent copy.
	SlotReady SlotState = iota
	// SlotNotYet: the record has not been written yet (or is being written).
	SlotNotYet
	// SlotOverwritten: the record was overwritten by a later lap.
	SlotOverwritten
	// SlotHole: write_seq has passed the record but its slot holds an older
	// sequence: a hole in a sparse ring that will never be filled.
	SlotHole

	// slotInFlight (never returned by ReadSlot): on a multi-producer ring
	// write_seq has passed the record but its producer has not finished it.
	slotInFlight
)

func (s SlotState) String() string {
	switch s {
	case SlotReady:
		return "ready"
	case SlotNotYet:
		return "not yet"
	case SlotOverwritten:
		return "overwritten"
	case SlotHole:
		return "hole"
	}
	return fmt.Sprintf("SlotState(%d)", int(s))
}

// readSlot is the seqlock read of one slot. It returns the slot sequence it
// saw (the second load when the copy was torn) and whether dst holds a
// consistent copy of record seq.
func (r *Ring) readSlot(seq uint64, dst []byte) (uint64, bool) {
	off := r.slotOff(seq)
	word := r.m.u64(off)
	s1 := word.Load()
	if s1 != seq {
		return s1, false
	}
	r.m.loadWords(dst, off+8)
	s2 := word.Load()
	return s2, s2 == seq
}

// classify says what a failed read of record seq means, s being the slot
// sequence the read saw. write_seq is loaded first and the slot again after
// it: the writer stores a slot before it publishes write_seq, so a record
// published between the two loads shows up as SlotReady (retry the read)
// instead of passing for a lap or a hole.
func (r *Ring) classify(seq, s uint64) (SlotState, uint64) {
	if s != SlotWriting && s > seq {
		return SlotOverwritten, s
	}
	w := r.writeSeq.Load()
	s = r.slotSeq(seq).Load()
	switch {
	case s == seq:
		return SlotReady, s
	case s != SlotWriting && s > seq:
		return SlotOverwritten, s
	case w < seq:
		return SlotNotYet, s
	case r.multi:
		// write_seq is the highest completed ticket: seq may still be in
		// flight, unless producers claimed its slot's next lap already.
		if r.claimSeq.Load() > seq+r.layout.Capacity {
			return SlotOverwritten, s
		}
		return slotInFlight, s
	case s == SlotWriting: // record seq was complete when w was loaded
		return SlotOverwritten, s
	}
	return SlotHole, s
}

// ReadSlot copies the payload of record seq into dst (at most the slot's
// payload size) without registering as a reader: the raw slot API replica
// code uses to serve rings of any element type. A torn copy is never
// reported ready.
func (r *Ring) ReadSlot(seq uint64, dst []byte) (SlotState, error) {
	if r.closed {
		return SlotNotYet, ErrClosed
	}
	if seq == 0 || seq == SlotWriting {
		return SlotNotYet, fmt.Errorf("%w: sequence %d", ErrInvalid, seq)
	}
	if len(dst) > r.layout.PayloadSize() {
		dst = dst[:r.layout.PayloadSize()]
	}
	var since time.Time
	for i := 0; ; i++ {
		s, ok := r.readSlot(seq, dst)
		if ok {
			return SlotReady, nil
		}
		st, _ := r.classify(seq, s)
		switch {
		case st == slotInFlight:
			// Stateless callers (serve) wait for an in-flight record here,
			// at most InFlightTimeout; then it is a hole that stays one.
			if stalled(&since, i) {
				return SlotHole, nil
			}
		case st != SlotReady:
			return st, nil
		case i >= 4:
			return SlotNotYet, nil
		}
	}
}

// stalled is the bounded wait on an in-flight record, round i: it spins,
// then yields, and reports true once InFlightTimeout has passed since the
// first call that looked at the clock (*since).
func stalled(since *time.Time, i int) bool {
	if i < 64 {
		return false
	}
	now := time.Now()
	if since.IsZero() {
		*since = now
	}
	runtime.Gosched()
	return now.Sub(*since) > InFlightTimeout
}

// SlotSeq returns the sequence word of the slot where seq lives (0 empty,
// SlotWriting mid-write, otherwise the sequence it holds).
func (r *Ring) SlotSeq(seq uint64) uint64 {
	if r.closed {
		return 0
	}
	return r.slotSeq(seq).Load()
}
