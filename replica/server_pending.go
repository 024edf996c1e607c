package replica

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"time"
)

// pendingConn is an admitted connection: while it is not live yet (in
// its handshake or catch-up) it waits in the pending queue, oldest first,
// so that a full pool (MaxPending) evicts the oldest for a newcomer; an
// attacker must then outpace real handshakes, not merely hold its
// connections. Its fields are guarded by Server.mu.
type pendingConn struct {
	c          net.Conn // the accepted connection
	peer       netip.Addr
	prev, next *pendingConn // the queue's links, while queued
	queued     bool         // in the queue: it counts as not live
	evicted    bool         // the full pool evicted it (RefusedEvicted)
	// shaking: in the handshake. An eviction then ends it by its
	// deadline, so that its goroutine tells the peer why; after the
	// handshake it closes the connection.
	shaking bool
}

// pendingQueue is the connections not live yet, a list threaded through
// them: head.next is the oldest, head.prev the newest.
type pendingQueue struct {
	head    pendingConn
	n       int
	perAddr map[netip.Addr]int // queued per peer address
}

func (q *pendingQueue) push(p *pendingConn) {
	if q.head.next == nil {
		q.head.next, q.head.prev, q.perAddr = &q.head, &q.head, map[netip.Addr]int{}
	}
	last := q.head.prev
	p.prev, p.next = last, &q.head
	last.next, q.head.prev = p, p
	p.queued = true
	q.n++
	q.perAddr[p.peer]++
}

// remove takes p out of the queue if it is in it.
func (q *pendingQueue) remove(p *pendingConn) {
	if !p.queued {
		return
	}
	p.prev.next, p.next.prev = p.next, p.prev
	p.prev, p.next, p.queued = nil, nil, false
	q.n--
	if q.perAddr[p.peer]--; q.perAddr[p.peer] <= 0 {
		delete(q.perAddr, p.peer)
	}
}

// evictOldest takes the oldest connection out of a full queue (s.mu
// held) and ends it: one in its handshake by a deadline in the past (its
// goroutine then tells the peer why), one in its catch-up by closing it.
func (s *Server) evictOldest() *pendingConn {
	p := s.lim.pending.head.next
	s.lim.pending.remove(p)
	p.evicted = true
	if p.shaking {
		p.c.SetDeadline(time.Unix(1, 0))
	} else {
		p.c.Close()
	}
	return p
}

// shookHands moves a connection whose handshake succeeded out of the
// handshake: an eviction now closes it. False: it was evicted meanwhile
// (and its connection must end).
func (s *Server) shookHands(p *pendingConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.shaking = false
	return !p.evicted
}

// handshakeFailed accounts for a connection whose handshake failed. One
// that was evicted (counted then), or that ran out of its handshake's
// time, is told why in an ERROR frame when via, the connection its peer
// reads, is not nil: nothing was sent on it yet. Any other failure is a
// rejection (BadFrames, EventRejected).
func (s *Server) handshakeFailed(c, via net.Conn, p *pendingConn, err error) {
	s.mu.Lock()
	evicted := p.evicted
	s.mu.Unlock()
	k := RefusedEvicted
	switch {
	case evicted:
	case errors.Is(err, os.ErrDeadlineExceeded):
		k = RefusedTimeout
		s.refused(k, c.RemoteAddr())
	default:
		s.st.badConn.Add(1)
		s.event(EventRejected, c, err)
		return
	}
	if via != nil {
		s.tell(via, k)
	}
}
