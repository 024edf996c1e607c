package replica

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
)

// Handoff runs one sender round on the caller's goroutine: what the ring
// holds and the datagram stream has not carried leaves now, and the TCP
// sessions are woken, without waking the sender. It is for a mirror served
// again in the same process (a hub): pass it as MirrorConfig.Published and
// each datagram's records go out on the goroutine that applied them, one
// hop and no wake-up. A hand-off's round never lingers (ServerConfig.Linger):
// the records came in the source's frames, paced already.
//
// Call it after every publish of the ring, as Published does: from the
// first call on, a sender of its own (no Loop) stops watching the ring
// between its rounds and sleeps until its next heartbeat instead (a
// hand-off that brings that nearer wakes it), so a hub's sender costs no
// CPU while records flow and takes none from the threads that carry them.
//
// If the sender is running a round itself, Handoff returns at once: that
// round, or the check after it (write_seq against what it sent, before it
// sleeps), sees the new records. It never blocks, never allocates, and
// does nothing before Serve has started or after Close.
func (s *Server) Handoff(uint64) {
	s.handing.Add(1)
	defer s.handing.Add(-1)
	sn := s.sender.Load()
	if sn == nil || s.closed.Load() {
		return
	}
	h := &sn.hand
	if !h.handed.Load() {
		h.handed.Store(true)
	}
	if s.udp != nil && s.sendMu.TryLock() {
		sn.handing = true
		sn.round(time.Now())
		sn.handing = false
		due := sn.deadline().UnixNano()
		s.sendMu.Unlock()
		s.st.handoffs.Add(1)
		if h.wake != nil && due < h.due.Load()-int64(handSlack) {
			h.wake.Notify()
		}
	}
	s.wakeSessions()
	s.wakeTelemetry()
}

// awaitHandoffs waits, in Close after closed is stored, until no Handoff
// is under way: a round there uses the transport and the ring's mapping,
// which Close is about to close. A round sends one batch at most, so the
// wait is a round's length; Close is rare, so it yields, then naps.
func (s *Server) awaitHandoffs() {
	for i := 0; s.handing.Load() != 0; i++ {
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// handSlack is how much sooner a Handoff's round must make the sender's
// deadline for it to wake the sleeping sender: a heartbeat may come up to
// this much later than the first heartbeat after data would (udpHeartbeat),
// so that bursts udpHeartbeat apart do not cost the mirror's thread an
// eventfd write each; after an idle spell (heartbeat intervals up to
// udpHeartbeatIdle) the wake comes.
const handSlack = udpHeartbeat

// handWait is how a sender of its own waits once its records come by
// Handoff: in ppoll on an eventfd (an idle.Waker) until its deadline.
type handWait struct {
	// handed is stored true by the first Handoff (Store; never false
	// again), loaded by the sender at the top of each turn: from then on
	// the sender's waits are handWait's.
	handed atomic.Bool
	// due is the end of the sender's next sleep (UnixNano), stored by the
	// sender under sendMu as it plans the sleep, loaded by Handoff, which
	// wakes it when its own round made the deadline (a heartbeat's,
	// after data) nearer by more than handSlack.
	due atomic.Int64
	// wake and idler are the sender's (nil with a Loop, or when no
	// eventfd could be made): wake is made by startHandWait before the
	// sender is stored, so every Handoff sees it; idler is the sender
	// goroutine's only.
	wake  *idle.Waker
	idler *idle.Idler
	// sleeps counts the sender's handed sleeps, wakeups those a Handoff
	// (or the end of Serve) cut short; the sender Adds, Stats loads.
	sleeps, wakeups atomic.Uint64
}

// sleep is one handed sleep of at most d (the sender's goroutine).
func (h *handWait) sleep(d time.Duration) {
	h.sleeps.Add(1)
	before := h.idler.Stats()
	h.idler.Idle(d)
	after := h.idler.Stats()
	if after.Wakeups+after.Skipped != before.Wakeups+before.Skipped {
		h.wakeups.Add(1)
	}
}

// startHandWait readies sn's handed waits, for a sender of its own. It
// makes an eventfd: without one (no descriptor to spare, as Serve may
// start with the process out of them) the sender keeps watching the ring
// as it does without Handoff, which only costs CPU.
func (sn *sender) startHandWait() {
	w, err := idle.NewWaker()
	if err != nil {
		return
	}
	sn.hand.wake = w
	sn.hand.idler = idle.NewIdler(idle.Strategy{Mode: idle.Block}, w)
}

// stopHandWait releases what startHandWait made, once the sender is done
// (a later Handoff's Notify does nothing).
func (sn *sender) stopHandWait() {
	if sn.hand.wake != nil {
		sn.hand.wake.Close()
	}
}

// wakeOnDone makes the end of ctx wake a handed sleep (the returned func
// stops that).
func (sn *sender) wakeOnDone(ctx context.Context) func() bool {
	if sn.hand.wake == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, sn.hand.wake.Notify)
}
