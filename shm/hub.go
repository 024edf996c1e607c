package shm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The park hub: one goroutine per process, started on first use, that
// sleeps in futex_waitv on the futex words of every parked receive
// (ParkWait) and on ctl, and wakes each parked receive whose words changed
// through its channel. Any number of blocked ParkWait receives thus hold
// one OS thread between them (the hub's, in the kernel) and park as
// goroutines; their contexts and deadlines are plain Go selects.
type hub struct {
	// ctl is bumped (atomic Add, then a private FUTEX_WAKE) whenever the
	// parked set changes; the hub Loads it before it snapshots the set
	// and sleeps on that value, so no change goes unseen.
	ctl     atomic.Uint32
	mu      sync.Mutex
	parked  map[*parking]struct{}
	started bool
}

// parking is one parked receive: the futex words it sleeps on (with the
// values it saw) and the channel the hub signals when one changed.
type parking struct {
	rings []*Ring
	vals  []uint32
	wake  chan struct{}
	timer *time.Timer
}

var parkHub hub

// futexWaitvMax is the most words one futex_waitv takes (FUTEX_WAITV_MAX).
// Parked words beyond ctl and 127 others are polled: the hub then sleeps
// at most 50 µs.
const futexWaitvMax = 128

// park adds p to the hub's set (starting the hub if needed).
func (h *hub) park(p *parking) {
	h.mu.Lock()
	if h.parked == nil {
		h.parked = map[*parking]struct{}{}
	}
	h.parked[p] = struct{}{}
	if !h.started {
		h.started = true
		go h.run()
	}
	h.mu.Unlock()
	h.poke()
}

// unpark removes p from the set, if the hub has not already (it removes
// the receives it wakes, and need not be told about those).
func (h *hub) unpark(p *parking) {
	h.mu.Lock()
	_, ok := h.parked[p]
	delete(h.parked, p)
	h.mu.Unlock()
	if ok {
		h.poke()
	}
}

func (h *hub) poke() {
	h.ctl.Add(1)
	futexWakePrivate(&h.ctl)
}

// run is the hub: snapshot the parked words, sleep until one changes (or
// the set does), signal the receives whose words changed.
func (h *hub) run() {
	Guard() // a parked ring cut under its mapping: changed recovers
	var ws [futexWaitvMax]futexWaiter
	for {
		c := h.ctl.Load()
		ws[0] = privateWaiter(&h.ctl, c)
		n := 1
		h.mu.Lock()
		for p := range h.parked {
			for i, r := range p.rings {
				if n < len(ws) {
					ws[n] = r.hdr.sharedWaiter(offFutex, p.vals[i])
					n++
				}
			}
		}
		over := n == len(ws) // words left out: bound the sleep, then check all
		h.mu.Unlock()
		d := time.Second
		if over {
			d = 50 * time.Microsecond
		}
		futexWaitv(ws[:n], d)
		woke := false
		h.mu.Lock()
		for p := range h.parked {
			if p.changed() {
				delete(h.parked, p)
				select {
				case p.wake <- struct{}{}:
				default:
				}
				woke = true
			}
		}
		h.mu.Unlock()
		if woke {
			// The woken receives are queued on this goroutine's P: let
			// them run before this one blocks in the kernel again with
			// the P (the runtime would take it back only after a while).
			runtime.Gosched()
		}
	}
}

// changed reports whether one of p's futex words moved since it parked.
// A word whose page was cut (the ring file truncated) counts as moved, on
// a guarded goroutine (the hub's, or a receive's under Guard): the receive
// is woken, and its own next load of the ring faults where its caller
// recovers. futex_waitv on such a word fails at once (EFAULT), so the
// hub must not keep it.
func (p *parking) changed() (moved bool) {
	defer func() {
		if r := recover(); r != nil {
			if Fault(r) == nil {
				panic(r)
			}
			moved = true
		}
	}()
	for i, r := range p.rings {
		if r.futex.Load() != p.vals[i] {
			return true
		}
	}
	return false
}

// parkSleep is the ParkWait sleep of one receive: announce it in every
// ring's waiting_consumers, re-check ready, then park until the hub says a
// word changed, done is closed, or d passes. Rings whose header is not
// writable cannot wake it: it then sleeps at most 50 µs.
func (w *waiter) parkSleep(rings []*Ring, ready func() bool, d time.Duration, done <-chan struct{}) {
	p := w.parking
	if p == nil {
		p = &parking{wake: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
		p.timer.Stop()
		w.parking = p
	}
	p.rings, p.vals = p.rings[:0], p.vals[:0]
	for i, r := range rings {
		if i == maxWaitRings {
			break
		}
		if r.hdr == nil {
			d = min(d, 50*time.Microsecond)
			continue
		}
		p.rings = append(p.rings, r)
		p.vals = append(p.vals, r.futex.Load())
		r.waiting.Add(1)
	}
	defer func() {
		for _, r := range p.rings {
			r.waiting.Add(^uint32(0))
		}
	}()
	if ready() {
		return
	}
	select { // a stale signal of an earlier park
	case <-p.wake:
	default:
	}
	parkHub.park(p)
	defer parkHub.unpark(p)
	if p.changed() { // moved between our loads and the hub's snapshot
		return
	}
	p.timer.Reset(d)
	defer p.timer.Stop()
	select {
	case <-p.wake:
	case <-done:
	case <-p.timer.C:
	}
}
