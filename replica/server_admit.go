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

// Connection limits (ServerConfig.MaxConns, MaxConnsPerAddr, MaxPending).
const (
	DefaultMaxConns        = 1024
	DefaultMaxConnsPerAddr = 64
	DefaultMaxPending      = 128
)

// Accept back-off after a failure the listener recovers from (file
// descriptors or memory exhausted): doubled per failure in a row.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// limits are the admission counts, guarded by Server.mu.
type limits struct {
	open    map[net.Conn]struct{} // connections admitted and not released (Close closes them)
	conns   int                   // len(open)
	perAddr map[netip.Addr]int    // connections open per peer address
	pending int                   // connections not live yet (handshake, catch-up)
	warned  time.Time             // last EventRefused
}

// admit takes a connection into the counts, or says which limit refuses
// it. A limit ≤ 0 is off.
func (s *Server) admit(c net.Conn, peer netip.Addr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, cfg := &s.lim, &s.cfg
	switch {
	case s.closed.Load(): // Close already closed the others (it sets closed under mu)
		return ErrClosed
	case cfg.MaxConns > 0 && l.conns >= cfg.MaxConns:
		return errTooManyConns
	case cfg.MaxConnsPerAddr > 0 && l.perAddr[peer] >= cfg.MaxConnsPerAddr:
		return errTooManyFromAddr
	case cfg.MaxPending > 0 && l.pending >= cfg.MaxPending:
		return errTooManyPending
	}
	if l.perAddr == nil {
		l.perAddr, l.open = map[netip.Addr]int{}, map[net.Conn]struct{}{}
	}
	l.open[c] = struct{}{}
	l.conns++
	l.perAddr[peer]++
	l.pending++
	return nil
}

var (
	errTooManyConns    = errors.New("connection limit reached (MaxConns)")
	errTooManyFromAddr = errors.New("connection limit of the address reached (MaxConnsPerAddr)")
	errTooManyPending  = errors.New("too many connections not live yet (MaxPending)")
)

// release drops a connection from the counts (pending: it never went
// live).
func (s *Server) release(c net.Conn, peer netip.Addr, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.lim
	delete(l.open, c)
	l.conns--
	if l.perAddr[peer]--; l.perAddr[peer] <= 0 {
		delete(l.perAddr, peer)
	}
	if pending {
		l.pending--
	}
}

// wentLive moves a session out of the pending count, once, and wakes
// every AwaitApplied (a live session counts).
func (ss *session) wentLive() {
	if ss.pending.CompareAndSwap(true, false) {
		s := ss.srv
		s.mu.Lock()
		s.lim.pending--
		s.mu.Unlock()
	}
	ss.srv.tele.wakeAwaits() // its mirror now counts for an AwaitApplied
}

// refuse closes a connection a limit refused: counted, and told to Events
// at most once a second (a flood must not flood the log too).
func (s *Server) refuse(c net.Conn, why error) {
	s.st.refused.Add(1)
	c.Close()
	s.mu.Lock()
	now := time.Now()
	tell := now.Sub(s.lim.warned) >= time.Second
	if tell {
		s.lim.warned = now
	}
	s.mu.Unlock()
	if tell {
		s.emit(ServerEvent{Kind: EventRefused, Peer: c.RemoteAddr(), Err: why})
	}
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
