package shm

import "fmt"

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
	s, ok := r.readSlot(seq, dst)
	switch {
	case ok:
		return SlotReady, nil
	case s == SlotWriting:
		if r.writeSeq.Load() >= seq {
			return SlotOverwritten, nil
		}
		return SlotNotYet, nil
	case s > seq:
		return SlotOverwritten, nil
	case r.writeSeq.Load() >= seq:
		return SlotHole, nil
	}
	return SlotNotYet, nil
}

// SlotSeq returns the sequence word of the slot where seq lives (0 empty,
// SlotWriting mid-write, otherwise the sequence it holds).
func (r *Ring) SlotSeq(seq uint64) uint64 {
	if r.closed {
		return 0
	}
	return r.slotSeq(seq).Load()
}
