package shm

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// maxWaitRings bounds the rings one blocking receive sleeps on at once
// (futex_waitv takes at most 128 words; one more is the cancel word).
const maxWaitRings = 64

// ctxPoll bounds one sleep of a cancellable receive when the kernel lacks
// futex_waitv (the cancel word cannot be slept on): the context's end is
// then noticed within this.
const ctxPoll = 200 * time.Microsecond

// noWaitv is set once futex_waitv returned ENOSYS: waits fall back to
// futex(2) on one word, or short sleeps.
var noWaitv atomic.Bool

// waiter is the blocking-receive state of one consumer (Reader,
// QueueReader, RingMultiplexer), reused by every receive of that consumer,
// which is used by one goroutine at a time.
//
// Go-native waiting: a receive never sleeps longer than its strategy
// allows and notices its context's end promptly. Spinning and yielding
// strategies poll ctx.Done() between polls. A futex sleep waits with
// futex_waitv on the rings' futex words and on cancel, a private word of
// this (heap) object that context.AfterFunc bumps and wakes when the
// receive's context ends: the sleeper wakes at once, on its own thread,
// whatever the sleep bound. A sleeping receive holds its OS thread in the
// kernel (the runtime hands its P to other goroutines); nothing polls.
type waiter struct {
	ws WaitStrategy
	// cancel is bumped with an atomic Add by the AfterFunc of a receive's
	// context, then FUTEX_WAKE'd (private). A sleeper Loads it before its
	// last check of ctx.Done() and sleeps only while it still holds that
	// value: a cancel after the check changes it, so no wake-up is lost.
	cancel atomic.Uint32
	// done is the Done channel of the context whose end bumps cancel (its
	// AfterFunc registration, undone by stop). It is kept across receives:
	// receiving again with the same context registers nothing, so a
	// sleeping receive allocates only for a new context.
	done <-chan struct{}
	stop func() bool
	// inFlight is set by the consumer's last poll when it waits on a
	// multi-producer record still in flight: sleeps are then bounded by
	// InFlightTimeout, so a dead producer's record is given up in time
	// whatever the strategy's sleep bound.
	inFlight bool
	// parking is this consumer's entry in the park hub (ParkWait), made
	// on its first park and reused.
	parking *parking
}

// watch makes the end of ctx (whose Done channel is done) wake this
// consumer's sleeps, instead of the context watched so far.
func (w *waiter) watch(ctx context.Context, done <-chan struct{}) {
	w.release()
	w.stop, w.done = context.AfterFunc(ctx, w.wake), done
}

// release drops the registration with the watched context (Close).
func (w *waiter) release() {
	if w.stop != nil {
		w.stop()
		w.stop, w.done = nil, nil
	}
}

// recvLoop polls try until it yields a record or an error, the deadline
// passes (ErrTimeout; context.DeadlineExceeded when it is ctx's), ctx ends
// (its error) or closed() reports the
// consumer closed (ErrClosed). Between polls it waits with the strategy;
// a futex sleep covers rings and ends early once ready() (a record may be
// there, checked after announcing the sleep in each ring's
// waiting_consumers). ctx may be nil; no allocation unless it sleeps with
// a cancellable ctx it did not sleep with before.
func recvLoop[R any](w *waiter, ctx context.Context, deadline time.Time, rings []*Ring,
	closed func() bool, try func() (R, bool, error), ready func() bool) (R, error) {
	var zero R
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for i := 0; ; i++ {
		if closed() {
			return zero, ErrClosed
		}
		if v, ok, err := try(); ok || err != nil {
			return v, err
		}
		if done != nil {
			select {
			case <-done:
				return zero, ctx.Err()
			default:
			}
		}
		if i&63 == 63 && !deadline.IsZero() && time.Now().After(deadline) {
			if ctx != nil { // the deadline is ctx's: report it as ctx does
				return zero, context.DeadlineExceeded
			}
			return zero, ErrTimeout
		}
		if i < w.ws.spins || w.ws.kind == waitSpin {
			continue
		}
		switch w.ws.kind {
		case waitYield:
			runtime.Gosched()
			continue
		case waitOSYield:
			schedYield()
			continue
		}
		if i < w.ws.spins+w.ws.yields { // Adaptive's yield phase
			schedYield()
			continue
		}
		if w.ws.kind == waitPark && !noWaitv.Load() {
			if d, ok := w.bound(deadline); ok {
				w.parkSleep(rings, ready, d, done)
			}
			continue
		}
		if done != nil && done != w.done {
			w.watch(ctx, done)
		}
		w.sleep(rings, ready, deadline, done)
	}
}

// deadlineAfter is the deadline of a receive waiting at most timeout
// (0 or less: none, the zero time).
func deadlineAfter(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeout)
}

// ctxDeadline is ctx's deadline, the zero time when it has none.
func ctxDeadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// wake is the AfterFunc of a cancellable receive's context.
func (w *waiter) wake() {
	w.cancel.Add(1)
	futexWakePrivate(&w.cancel)
}

// bound is how long one sleep may last: the strategy's bound, at most
// InFlightTimeout while waiting on an in-flight record, never past the
// deadline (ok false: it has passed).
func (w *waiter) bound(deadline time.Time) (time.Duration, bool) {
	d := w.ws.maxSleep
	if d <= 0 {
		d = DefaultMaxSleep
	}
	if w.inFlight {
		d = min(d, InFlightTimeout)
	}
	if !deadline.IsZero() {
		if d = min(d, time.Until(deadline)); d <= 0 {
			return 0, false
		}
	}
	return d, true
}

// sleep is one futex sleep on every ring's futex word (and on cancel when
// done is not nil), at most the strategy's bound and never past deadline.
// It announces itself in each ring's waiting_consumers first and does not
// sleep if ready() then holds: a producer publishing after that sees the
// announcement and wakes it, or has already changed the futex word.
func (w *waiter) sleep(rings []*Ring, ready func() bool, deadline time.Time, done <-chan struct{}) {
	d, ok := w.bound(deadline)
	if !ok {
		return
	}
	var ws [maxWaitRings + 1]futexWaiter
	n := 0
	for i, r := range rings {
		if i == maxWaitRings {
			break
		}
		if r.hdr == nil {
			continue
		}
		// Load the word before announcing and re-checking: a publish
		// after this load changes it, so the sleep returns at once.
		ws[n] = r.hdr.sharedWaiter(offFutex, r.futex.Load())
		r.waiting.Add(1)
		n++
	}
	defer func() {
		for i, r := range rings {
			if r.hdr != nil && i < maxWaitRings {
				r.waiting.Add(^uint32(0))
			}
		}
	}()
	if n < len(rings) { // some ring's producer cannot wake us: poll it
		d = min(d, 50*time.Microsecond)
	}
	if ready() {
		return
	}
	if done != nil {
		ws[n] = privateWaiter(&w.cancel, w.cancel.Load())
		select {
		case <-done:
			return
		default:
		}
	}
	switch {
	case n == 0:
		time.Sleep(d)
	case !noWaitv.Load():
		k := n
		if done != nil {
			k++
		}
		if futexWaitv(ws[:k], d) != nil {
			noWaitv.Store(true)
		}
	case n == 1 && len(rings) == 1:
		if done != nil {
			d = min(d, ctxPoll)
		}
		rings[0].hdr.futexWait(offFutex, uint32(ws[0].val), d)
	default:
		time.Sleep(min(d, ctxPoll))
	}
}
