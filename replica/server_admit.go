package replica

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
)

// Connection limits (ServerConfig.MaxConns, MaxConnsPerAddr, MaxPending,
// MaxPendingPerAddr, HandshakeTimeout).
const (
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerAddr   = 64
	DefaultMaxPending        = 128
	DefaultMaxPendingPerAddr = 16
	// DefaultHandshakeTimeout covers a keyed handshake across a 200 ms
	// round trip with two losses repaired (docs/guide/security.md says
	// how it was measured: TestHandshakeAcrossWAN).
	DefaultHandshakeTimeout = 3 * time.Second
)

// Accept back-off after a failure the listener recovers from (file
// descriptors or memory exhausted): doubled per failure in a row.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// limits are the admission counts, guarded by Server.mu.
type limits struct {
	// open holds the connections admitted and not released (Close
	// closes them), each with its entry in the pending queue.
	open    map[net.Conn]*pendingConn
	conns   int                // len(open)
	perAddr map[netip.Addr]int // connections open per peer address
	pending pendingQueue       // connections not live yet (handshake, catch-up), oldest first
	told    [refusalKinds]told // the last EventRefused of each kind
	why     *refusals          // made at the first use (refusalsLocked)
}

// refusalError is admit's refusal of a connection.
type refusalError RefusalKind

func (e refusalError) Error() string {
	return "replica: connection refused: " + RefusalKind(e).String()
}

// admit takes a connection into the counts as not live yet, its handshake
// deadline set, or says which limit refuses it (a refusalError), or that
// the server is closed (ErrClosed). A limit ≤ 0 is off. When MaxPending
// connections are not live yet, the oldest of them is evicted for this
// one (counted and told as RefusedEvicted).
func (s *Server) admit(c net.Conn, peer netip.Addr) error {
	s.mu.Lock()
	_, victim, err := s.admitLocked(c, peer)
	s.mu.Unlock()
	if victim != nil {
		s.refused(RefusedEvicted, victim.c.RemoteAddr())
	}
	return err
}

func (s *Server) admitLocked(c net.Conn, peer netip.Addr) (p, victim *pendingConn, err error) {
	l, cfg := &s.lim, &s.cfg
	switch {
	case s.closed.Load(): // Close already closed the others (it sets closed under mu)
		return nil, nil, ErrClosed
	case cfg.MaxConns > 0 && l.conns >= cfg.MaxConns:
		return nil, nil, refusalError(RefusedConns)
	case cfg.MaxConnsPerAddr > 0 && l.perAddr[peer] >= cfg.MaxConnsPerAddr:
		return nil, nil, refusalError(RefusedAddr)
	case s.maxPendingPerAddr() > 0 && l.pending.perAddr[peer] >= s.maxPendingPerAddr():
		return nil, nil, refusalError(RefusedAddrPending)
	}
	if cfg.MaxPending > 0 && l.pending.n >= cfg.MaxPending {
		victim = s.evictOldest()
	}
	if l.perAddr == nil {
		l.perAddr, l.open = map[netip.Addr]int{}, map[net.Conn]*pendingConn{}
	}
	c.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	p = &pendingConn{c: c, peer: peer, shaking: true}
	l.pending.push(p)
	l.open[c] = p
	l.conns++
	l.perAddr[peer]++
	return p, victim, nil
}

// maxPendingPerAddr is ServerConfig.MaxPendingPerAddr, or its default.
func (s *Server) maxPendingPerAddr() int {
	return orDefault(s.cfg.MaxPendingPerAddr, DefaultMaxPendingPerAddr)
}

// handshakeTimeout is ServerConfig.HandshakeTimeout, or its default.
func (s *Server) handshakeTimeout() time.Duration {
	if s.cfg.HandshakeTimeout > 0 {
		return s.cfg.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

// admitted is the entry admit made for c (serveConn's, once).
func (s *Server) admitted(c net.Conn) *pendingConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lim.open[c]
}

// release drops a connection from the counts, and from the pending queue
// if it never went live.
func (s *Server) release(c net.Conn, peer netip.Addr, p *pendingConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.lim
	delete(l.open, c)
	l.conns--
	if l.perAddr[peer]--; l.perAddr[peer] <= 0 {
		delete(l.perAddr, peer)
	}
	if p != nil {
		l.pending.remove(p)
	}
}

// wentLive moves a session out of the pending queue, once, and wakes
// every AwaitApplied (a live session counts).
func (ss *session) wentLive() {
	if ss.pending.CompareAndSwap(true, false) {
		s := ss.srv
		s.mu.Lock()
		s.lim.pending.remove(ss.admitted)
		s.mu.Unlock()
	}
	ss.srv.tele.wakeAwaits() // its mirror now counts for an AwaitApplied
}

// peerAddr is a connection's remote address (unmapped).
func peerAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// acceptRetry says whether an accept error is one the listener recovers
// from: out of file descriptors or buffers, or a connection aborted before
// it was accepted.
func acceptRetry(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// backoff is the accept loop's wait after failure n in a row (n ≥ 1);
// the first failure of a burst is told to Events.
func (s *Server) backoff(ctx context.Context, err error, n int) {
	s.st.acceptErrors.Add(1)
	if n == 1 {
		s.emit(ServerEvent{Kind: EventAcceptFailed, Err: err})
	}
	d := acceptBackoffMin << min(n-1, 8)
	idle.Sleep(ctx, min(d, acceptBackoffMax))
}

// orDefault is v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
