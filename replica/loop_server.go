package replica

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/shm"
)

// watchBound bounds one sleep of a ring watcher: the longest sleep of a
// server's own loop (an idle heartbeat interval), and how long a stopping
// server may wait for its watcher.
const watchBound = udpHeartbeatIdle

// serverMember is a server's sender run by a Loop: sendLoop's rounds, its
// ring wait left to the loop (a turn) and, when the loop sleeps, to a
// ring watcher.
type serverMember struct {
	s  *Server
	sn *sender
	// Run's goroutine (the loop's) only:
	seen     uint64    // write_seq at the last turn: sessions woken up to it
	target   uint64    // the sequence whose publication is the next work
	deadline time.Time // the next round due without records (sender.deadline)
	watch    *ringWatch
	// peek is the transport when it is a Peeker: the turns then receive
	// the PUNCH datagrams (punches, their buffers), and no punchLoop
	// goroutine waits in Go's poller on sockets the loop polls anyway
	// (with shared AF_XDP sockets every frame for a mirror of the process
	// would wake it).
	peek    Peeker
	punches []Message
	pollFD  []int // the transport's descriptors, when the turns receive
	// done is closed by the turn that finds the server closed or its
	// graceful stop's last datagram sent.
	done   chan struct{}
	closed bool // done is closed (loop's goroutine)
}

// loopSend is sendLoop's counterpart for a server in a Loop: the loop's
// thread runs the rounds; this goroutine only joins and leaves the loop,
// leaving when ctx ends, the server closes or a graceful stop has sent
// its last datagram.
func (s *Server) loopSend(ctx context.Context, sn *sender) {
	l := s.cfg.Loop
	m := &serverMember{s: s, sn: sn, seen: s.ring.WriteSeq(), done: make(chan struct{}),
		watch: newRingWatch(s, l.notify)}
	m.target = m.seen + 1
	if s.punchesInLoop() {
		m.peek = s.udp.(Peeker)
		m.punches = punchBuffers()
		if p, ok := s.udp.(Pollable); ok { // a sleeping loop wakes for a PUNCH
			m.pollFD = p.PollFDs()
			p.OnArrival(l.notify)
		}
	}
	go m.watch.run()
	s.mu.Lock()
	if s.closed.Load() { // Close ran first: it found no member to remove
		s.mu.Unlock()
		m.watch.stop()
		return
	}
	s.loopMember = m
	l.add(m)
	s.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-m.done:
	}
	l.remove(m)
	m.watch.stop()
}

func (m *serverMember) turn(now time.Time) (busy bool) {
	s := m.s
	if m.closed {
		return false
	}
	// A fault on the served ring (its file cut; Loop.Run set the fault
	// guard) loses that ring, with sendMu released, and the loop goes on
	// with its other members.
	locked := false
	defer func() {
		if r := recover(); r != nil {
			if locked {
				s.sendMu.Unlock()
			}
			s.faulted(r)
			busy = false
		}
	}()
	if m.peek != nil && m.peek.Arrived() {
		s.receivePunches(m.punches, 0)
	}
	// Nothing to send, nobody to wake and no heartbeat due: a few loads.
	if s.ring.WriteSeq() < m.target && now.Before(m.deadline) && !s.stop.halted.Load() && !s.closed.Load() {
		return false
	}
	s.sendMu.Lock()
	locked = true
	if s.stop.halted.Load() || s.closed.Load() {
		locked = false
		s.sendMu.Unlock()
		m.closed = true
		close(m.done)
		return false
	}
	before := m.target
	if s.udp != nil {
		m.target = m.sn.round(now)
		for i := 1; i < loopSteps && s.ring.WriteSeq() >= m.target; i++ {
			m.target = m.sn.round(now) // a full batch went out: more is there
		}
	} else {
		m.target = s.ring.WriteSeq() + 1
	}
	m.deadline = m.sn.deadline()
	locked = false
	s.sendMu.Unlock()
	w := s.ring.WriteSeq()
	if w != m.seen {
		m.seen = w
		s.wakeSessions()
		s.wakeTelemetry()
	}
	// The turn found work when it sent records (the target moved: the
	// loop's Adaptive phases start again, as a thread's sender's do after
	// each wait; without this, a loop of servers alone would stay in its
	// sleep phase once reached, however busy its rings), or when more
	// are there (a full batch, or new ones came during the round).
	return m.target != before || w >= m.target
}

func (m *serverMember) due(now time.Time) time.Duration {
	if m.closed {
		return idleBound
	}
	return m.deadline.Sub(now)
}

func (m *serverMember) fds() []int { return m.pollFD }

func (m *serverMember) sleep(max time.Duration) {
	if !m.closed {
		m.watch.arm(m.target, max)
	}
}

// pending is false: a record published since the turn is the ring
// watcher's to report (armed just before the loop sleeps, it notifies the
// Waker at once), not a wake-up someone lost.
func (m *serverMember) pending() bool { return false }

// ringWatch sleeps on a served ring's futex while its Loop sleeps, and
// notifies the loop when the ring reaches the target (or its sleep ran to
// its bound). Armed by the loop's goroutine before each of its sleeps; it
// then sleeps at most once (a publish that comes while the loop is busy
// finds at most one sleeper to wake: the producer pays one FUTEX_WAKE per
// sleep of the loop, not one per record).
type ringWatch struct {
	s      *Server // whose ring it watches: a fault on it loses the ring (guardRing)
	ring   *shm.Ring
	notify func()
	// target and bound are stored by arm (the loop's goroutine) before
	// its send on armed, which publishes them to run.
	target atomic.Uint64
	bound  atomic.Int64
	armed  chan struct{} // capacity 1: an arm never blocks
	quit   chan struct{} // closed by stop
	ended  chan struct{} // closed by run as it returns
}

func newRingWatch(s *Server, notify func()) *ringWatch {
	return &ringWatch{s: s, ring: s.ring, notify: notify, armed: make(chan struct{}, 1),
		quit: make(chan struct{}), ended: make(chan struct{})}
}

// arm makes the watcher sleep until the ring reaches target, at most max
// (and watchBound).
func (w *ringWatch) arm(target uint64, max time.Duration) {
	w.target.Store(target)
	w.bound.Store(int64(min(max, watchBound)))
	select {
	case w.armed <- struct{}{}:
	default: // armed already: it reads the newest target when it wakes
	}
}

var watchWait = shm.FutexWait(0)

func (w *ringWatch) run() {
	defer close(w.ended)
	defer w.s.guardRing(guard()) // a cut ring ends its server, not the process
	for {
		select {
		case <-w.armed:
		case <-w.quit:
			return
		}
		w.ring.Await(w.target.Load(), watchWait, time.Duration(w.bound.Load()))
		w.notify()
	}
}

// stop ends the watcher and returns once it no longer touches the ring
// (at most one sleep's bound).
func (w *ringWatch) stop() {
	close(w.quit)
	<-w.ended
}
