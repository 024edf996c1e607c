package shm

import (
	"context"
	"time"
)

// QueueOptions configure a competing (work-queue) consumer.
type QueueOptions struct {
	// Wait is the strategy of blocking receives (default SpinYield(128)).
	Wait *WaitStrategy
}

// QueueReader is one of several competing consumers of a multi-producer
// ring, byte-oriented: MpmcQueueConsumer[T] wraps it. The consumers share
// read_seq: each ticket goes to exactly one of them (the one whose
// CompareAndSwap moved read_seq past it). Delivery is at-most-once: a
// ticket overwritten before it was read, or whose producer did not finish
// it within InFlightTimeout, is counted in Dropped by the consumer that
// took it and never returned torn. A QueueReader is used by one goroutine
// at a time.
type QueueReader struct {
	r       *Ring
	pending uint64    // ticket taken from read_seq, not yet read (0: none)
	since   time.Time // when pending was first seen in flight
	last    uint64
	dropped uint64
	recv    uint64
	w       *waiter
}

// OpenQueueReader attaches a competing consumer to the multi-producer ring
// at path. It needs write access (it moves read_seq).
func OpenQueueReader(path string, opts QueueOptions) (*QueueReader, error) {
	r, err := openMulti(path, "open queue consumer")
	if err != nil {
		return nil, err
	}
	q := &QueueReader{r: r, w: &waiter{ws: SpinYield(128)}}
	if opts.Wait != nil {
		q.w.ws = *opts.Wait
	}
	return q, nil
}

// Ring is the ring this consumer reads.
func (q *QueueReader) Ring() *Ring { return q.r }

// Seq is the ticket of the last record returned (0 before the first).
func (q *QueueReader) Seq() uint64 { return q.last }

// Dropped counts tickets this consumer took but could not deliver: lapped
// by the producers before it got to them, or never finished by their
// producer.
func (q *QueueReader) Dropped() uint64 { return q.dropped }

// Received counts records returned.
func (q *QueueReader) Received() uint64 { return q.recv }

// TryRecv takes the next ticket, copies its record's payload into dst (up
// to the payload size) and returns its sequence, or ok false when no
// ticket is ready. It never blocks: a ticket it took whose record is still
// in flight stays its own, and later calls read it first.
func (q *QueueReader) TryRecv(dst []byte) (seq uint64, ok bool) {
	r := q.r
	if r.closed {
		return 0, false
	}
	if n := r.layout.PayloadSize(); len(dst) > n {
		dst = dst[:n]
	}
	q.w.inFlight = false
	for {
		if t := q.pending; t != 0 {
			switch q.readTicket(t, dst) {
			case SlotReady:
				q.pending, q.last = 0, t
				q.recv++
				return t, true
			case slotInFlight:
				q.w.inFlight = true
				return 0, false
			}
			q.pending = 0
			q.dropped++
		}
		if !q.take() {
			return 0, false
		}
	}
}

// take claims the next ticket from read_seq into pending. Tickets a full
// ring behind the producers are gone: one CompareAndSwap jumps past them
// all, and its winner counts them dropped.
func (q *QueueReader) take() bool {
	r := q.r
	for {
		rs, cl := r.readSeq.Load(), r.claimSeq.Load()
		if rs == 0 { // a ring initialised without the reference's 1
			r.readSeq.CompareAndSwap(0, 1)
			continue
		}
		if rs >= cl {
			return false
		}
		if floor := cl - min(cl, r.layout.Capacity); rs < floor {
			if r.readSeq.CompareAndSwap(rs, floor) {
				q.dropped += floor - rs
			}
			continue
		}
		if r.readSeq.CompareAndSwap(rs, rs+1) {
			q.pending, q.since = rs, time.Time{}
			return true
		}
	}
}

// readTicket is the seqlock read of ticket t: SlotReady with dst filled,
// slotInFlight while its producer may still write it, anything else when
// it is lost (overwritten, torn by a later lap, or in flight for longer
// than InFlightTimeout).
func (q *QueueReader) readTicket(t uint64, dst []byte) SlotState {
	r := q.r
	s, ok := r.readSlot(t, dst)
	switch {
	case ok:
		return SlotReady
	case s != SlotWriting && s > t: // a later lap is there
		return SlotOverwritten
	case r.claimSeq.Load() > t+r.layout.Capacity: // one is being written (a torn copy), or will be
		return SlotOverwritten
	}
	now := time.Now()
	if q.since.IsZero() {
		q.since = now
	} else if now.Sub(q.since) > InFlightTimeout {
		return SlotOverwritten
	}
	return slotInFlight
}

// Recv waits (with the consumer's strategy) for the next ticket's record,
// at most timeout (0: forever). It returns ErrTimeout or ErrClosed.
func (q *QueueReader) Recv(dst []byte, timeout time.Duration) (uint64, error) {
	return q.recvUntil(nil, deadlineAfter(timeout), dst)
}

// RecvContext waits for the next ticket's record until ctx is done,
// returning ctx's error then, promptly (see waiter).
func (q *QueueReader) RecvContext(ctx context.Context, dst []byte) (uint64, error) {
	return q.recvUntil(ctx, ctxDeadline(ctx), dst)
}

func (q *QueueReader) recvUntil(ctx context.Context, deadline time.Time, dst []byte) (uint64, error) {
	rings := [1]*Ring{q.r}
	return recvLoop(q.w, ctx, deadline, rings[:], q.isClosed, func() (uint64, bool, error) {
		seq, ok := q.TryRecv(dst)
		return seq, ok, nil
	}, q.ready)
}

func (q *QueueReader) isClosed() bool { return q.r.closed }

// ready reports whether a poll may find something: the pending ticket's
// slot changed, or a ticket is there to take.
func (q *QueueReader) ready() bool {
	r := q.r
	if t := q.pending; t != 0 {
		s := r.slotSeq(t).Load()
		return s == t || s != SlotWriting && s > t
	}
	return r.readSeq.Load() < r.claimSeq.Load()
}

// Close unmaps the ring. A ticket taken but not read yet is lost (counted
// by no one: the consumer is gone).
func (q *QueueReader) Close() error {
	q.w.release()
	return q.r.Close()
}
