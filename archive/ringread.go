package archive

import (
	"context"
	"time"

	"github.com/ringfire/ringfire/shm"
)

const (
	// drainBatch is how many sequences a recorder reads between looks
	// at its context and its flush deadline.
	drainBatch = 4096
	// clockEvery: a recorder reads the clock once per this many records
	// read in a row (they were all seen within a few microseconds).
	clockEvery = 256
	// maxIdleWait bounds one wait for the ring, so that the end of Run's
	// context is seen within it.
	maxIdleWait = 10 * time.Millisecond
)

// slotLost (never returned by shm) is a blob ring's record whose slot was
// read but whose blob the arena lapped: a gap of that record alone.
const slotLost = shm.SlotState(-1)

// follow records the ring until ctx ends (nil), the ring is replaced
// (errReplaced) or cut (an error wrapping shm.ErrTruncated), or the
// writer fails. It runs under shm.Protect: a fault in the ring's mapping
// (its file cut) ends it too.
func (r *Recorder) follow(ctx context.Context) error {
	done := ctx.Done()
	for {
		caught, err := r.drain(drainBatch)
		if err != nil {
			return err
		}
		now := time.Now()
		if err := r.flushDue(now); err != nil {
			return err
		}
		select {
		case <-done:
			return nil
		default:
		}
		if !caught {
			continue
		}
		if err := r.w.SyncDue(); err != nil { // idle: the last writes synced on time
			return r.werr(err)
		}
		if now.Sub(r.checked) >= r.cfg.Poll {
			r.checked = now
			if err := r.ringGone(); err != nil {
				return err
			}
		}
		wait := min(r.cfg.Poll-now.Sub(r.checked), maxIdleWait)
		if t := r.w.Pending(); t != 0 {
			wait = min(wait, time.Duration(t+int64(r.cfg.FlushDelay)-now.UnixNano()))
		}
		if wait > 0 {
			r.ring.Await(r.next, r.ws, wait)
		}
	}
}

// ringGone reports a ring replaced (errReplaced) or cut (wrapping
// shm.ErrTruncated), after recording what the old ring still had.
func (r *Recorder) ringGone() error {
	if err := r.ring.Shrunk(); err != nil {
		return err
	}
	if !r.ring.Replaced() {
		return nil
	}
	for { // a producer alive on an unlinked file: take what it wrote
		caught, err := r.drain(drainBatch)
		if err != nil {
			return err
		}
		if caught {
			break
		}
	}
	return errReplaced
}

// flushDue pushes the writer's buffer to be written once its oldest
// entry waited FlushDelay (the writer also writes whenever its buffer
// fills). It does not wait for the write: a recorder that waited for
// the disk every FlushDelay would stop reading its ring meanwhile.
func (r *Recorder) flushDue(now time.Time) error {
	if t := r.w.Pending(); t == 0 || now.UnixNano()-t < int64(r.cfg.FlushDelay) {
		return nil
	}
	if err := r.w.Push(); err != nil {
		return r.werr(err)
	}
	return nil
}

// drain records from r.next on, at most limit sequences; caught reports
// that it reached a sequence the ring has not written yet.
func (r *Recorder) drain(limit int) (caught bool, err error) {
	now := time.Now().UnixNano()
	r.st.writeSeq.Store(r.ring.WriteSeq())
	defer func() { r.st.next.Store(r.next) }()
	for i := 0; i < limit; i++ {
		if i%clockEvery == clockEvery-1 {
			now = time.Now().UnixNano()
		}
		st, rec := r.read(r.next)
		switch st {
		case shm.SlotReady:
			if err := r.flushGap(now); err != nil {
				return false, err
			}
			if err := r.w.Append(r.next, now, rec); err != nil {
				return false, r.werr(err)
			}
			r.next++
		case shm.SlotOverwritten: // lapped: what the ring lost since
			last := max(r.ring.Oldest()-1, r.next)
			r.addGap(r.next, last)
			r.next = last + 1
		case shm.SlotHole, slotLost:
			r.addGap(r.next, r.next)
			r.next++
		default: // SlotNotYet
			return true, r.flushGap(now)
		}
	}
	return false, nil
}

// addGap adds from..last to the pending gap (they follow it) or starts
// one.
func (r *Recorder) addGap(from, last uint64) {
	if r.gapFrom == 0 {
		r.gapFrom = from
	}
	r.gapTo = last
}

// flushGap appends the pending gap, if any.
func (r *Recorder) flushGap(now int64) error {
	if r.gapFrom == 0 {
		return nil
	}
	from, last := r.gapFrom, r.gapTo
	r.gapFrom, r.gapTo = 0, 0
	if err := r.w.Gap(from, last, now); err != nil {
		return r.werr(err)
	}
	return nil
}

// read reads record seq: its wire bytes (the slot payload, then a blob
// ring's blob) when SlotReady.
func (r *Recorder) read(seq uint64) (shm.SlotState, []byte) {
	p := r.rec[:r.payload]
	st, err := r.ring.ReadSlot(seq, p)
	if err != nil {
		return shm.SlotNotYet, nil
	}
	if st != shm.SlotReady || !r.blob {
		return st, p
	}
	d := shm.DecodeDescriptor(p)
	if uint64(d.Len) > r.src.ArenaSize {
		return slotLost, nil
	}
	need := r.payload + int(d.Len)
	if cap(r.rec) < need {
		b := make([]byte, need, need+need/2)
		copy(b, p)
		r.rec = b
	}
	rec := r.rec[:need]
	whole, err := r.ring.ReadBlob(d, rec[r.payload:])
	if err != nil || !whole {
		return slotLost, nil
	}
	return shm.SlotReady, rec
}
