package replica

import (
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// stop says why fill ended a frame.
type stop int

const (
	stopFull     stop = iota // the budget or the record limit is reached
	stopCaughtUp             // the next record is not published yet (or past last)
	stopLost                 // the next record is gone: overwritten, a hole, or its blob lapped
	stopTooBig               // the next record does not fit even an empty frame
)

// feed reads raw records from a source ring into DATA frames. It never
// returns torn bytes: slots are read with the seqlock protocol and blob
// bytes are re-checked against the arena's reservation counter.
type feed struct {
	ring  *shm.Ring
	shape wire.Shape
	slot  []byte // scratch slot payload for blob rings
}

func newFeed(r *shm.Ring) *feed {
	s := wire.ShapeOf(wire.GeometryOf(r.Layout()))
	return &feed{ring: r, shape: s, slot: make([]byte, s.Payload)}
}

// fill appends one DATA frame to buf, with records from seq up to last
// (inclusive), within budget bytes (header included) and at most max
// records. It returns the extended buffer, the number of records, and why
// it stopped; the frame is only appended when count > 0.
func (f *feed) fill(buf []byte, seq, last uint64, budget, max int) ([]byte, int, stop) {
	start := len(buf)
	if cap(buf)-start < budget {
		grown := make([]byte, start, start+budget)
		copy(grown, buf)
		buf = grown
	}
	b := buf[:start+wire.HeaderSize]
	max = min(max, 0xFFFF)
	count, why := 0, stopFull
	for count < max {
		if seq+uint64(count) > last {
			why = stopCaughtUp
			break
		}
		var st shm.SlotState
		var ok bool
		b, st, ok = f.appendRecord(b, seq+uint64(count), start+budget)
		if !ok {
			switch {
			case st == shm.SlotReady && count == 0:
				why = stopTooBig
			case st == shm.SlotReady:
				why = stopFull
			case st == shm.SlotNotYet:
				why = stopCaughtUp
			default:
				why = stopLost
			}
			break
		}
		count++
	}
	if count == 0 {
		return buf[:start], 0, why
	}
	wire.Header{Kind: wire.KindData, Count: uint16(count), Len: uint32(len(b) - start - wire.HeaderSize), Seq: seq}.Put(b[start:])
	return b, count, why
}

// appendRecord appends record seq to b if it fits before limit. ok is false
// when it does not fit (st Ready) or cannot be read (st says why).
func (f *feed) appendRecord(b []byte, seq uint64, limit int) ([]byte, shm.SlotState, bool) {
	n := len(b)
	if n+f.shape.Payload > limit {
		return b, shm.SlotReady, false
	}
	if !f.shape.Blob() {
		st, _ := f.ring.ReadSlot(seq, b[n:n+f.shape.Payload])
		if st != shm.SlotReady {
			return b, st, false
		}
		return b[:n+f.shape.Payload], st, true
	}
	st, _ := f.ring.ReadSlot(seq, f.slot)
	if st != shm.SlotReady {
		return b, st, false
	}
	d := shm.DecodeDescriptor(f.slot)
	if n+f.shape.Payload+int(d.Len) > limit {
		return b, shm.SlotReady, false
	}
	b = append(b[:n], f.slot...)
	whole, err := f.ring.ReadBlob(d, b[len(b):len(b)+int(d.Len)])
	if err != nil || !whole {
		return b[:n], shm.SlotOverwritten, false
	}
	return b[:len(b)+int(d.Len)], shm.SlotReady, true
}

// recordSize returns the wire size of record seq (0 if it cannot be read).
func (f *feed) recordSize(seq uint64) int {
	if !f.shape.Blob() {
		return f.shape.Payload
	}
	if st, _ := f.ring.ReadSlot(seq, f.slot); st != shm.SlotReady {
		return 0
	}
	return f.shape.Payload + int(shm.DecodeDescriptor(f.slot).Len)
}

// skipLost returns the first sequence from seq on (at most to + 1) whose
// record can be read whole: past overwritten slots, holes of a sparse ring
// and blobs the arena lapped.
func (f *feed) skipLost(seq, to uint64) uint64 {
	for seq <= to {
		st, _ := f.ring.ReadSlot(seq, f.slot)
		switch st {
		case shm.SlotNotYet:
			return seq
		case shm.SlotOverwritten:
			seq = max(seq+1, f.ring.Oldest())
			continue
		case shm.SlotReady:
			if !f.shape.Blob() {
				return seq
			}
			d := shm.DecodeDescriptor(f.slot)
			if f.ring.BlobLive(d) {
				return seq
			}
		}
		seq++
	}
	// Never announce records past the range asked for as lost: a mirror
	// NAKing a hole holds what follows it.
	return min(seq, to+1)
}
