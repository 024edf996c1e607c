package replica

import (
	"sync/atomic"

	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// sendRange sends records from..to over the session's TCP connection in
// DATA frames of up to 64 KiB (a larger single blob gets a frame of its
// own), at most about burstBytes per call, and returns the next sequence
// to send. Records the ring no longer holds become a GAP frame naming the
// next record that will come. nak marks the answer to a NAK.
func (ss *session) sendRange(f *feed, buf []byte, from, to uint64, nak bool) ([]byte, uint64, error) {
	s := ss.srv
	seq, sentBytes := from, 0
	for seq <= to && sentBytes < burstBytes {
		var count int
		var why stop
		buf, count, why = f.fill(buf[:0], seq, to, tcpFrameMax+wire.HeaderSize, 0xFFFF)
		if why == stopTooBig {
			buf, count, why = f.fill(buf[:0], seq, to, f.recordSize(seq)+wire.HeaderSize, 1)
		}
		if count > 0 {
			if err := ss.write(buf, false); err != nil {
				return buf, seq, err
			}
			seq += uint64(count)
			sentBytes += len(buf)
			storeMax(&ss.sent, seq-1)
			s.st.tcpFrames.Add(1)
			s.st.tcpRecords.Add(uint64(count))
			if nak {
				s.st.retrans.Add(uint64(count))
			}
		}
		switch why {
		case stopCaughtUp:
			return buf, seq, ss.write(nil, true)
		case stopLost:
			// Name the next record of this range, never one past it:
			// what lies beyond was not asked for, and a mirror may hold it.
			next := min(f.skipLost(seq, to), to+1)
			var b [wire.HeaderSize]byte
			wire.Header{Kind: wire.KindGap, Seq: next}.Put(b[:])
			if err := ss.write(b[:], false); err != nil {
				return buf, seq, err
			}
			s.st.gaps.Add(1)
			s.st.gapRecords.Add(next - seq)
			storeMax(&ss.sent, next-1)
			seq = next
		}
	}
	return buf, seq, ss.write(nil, true)
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

func storeMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}
