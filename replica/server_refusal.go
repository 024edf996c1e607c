package replica

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// RefusalKind says why the source refused a connection, or dropped one
// before it was live (ServerEvent.Refusal; ServerStats counts each kind).
type RefusalKind int

const (
	// RefusedNone: not a refusal (the Refusal of other events).
	RefusedNone RefusalKind = iota
	// RefusedConns: MaxConns connections were open.
	RefusedConns
	// RefusedAddr: MaxConnsPerAddr connections from the peer's address
	// were open.
	RefusedAddr
	// RefusedAddrPending: MaxPendingPerAddr connections from the peer's
	// address were not live yet (in their handshake or catch-up).
	RefusedAddrPending
	// RefusedEvicted: MaxPending connections were not live yet, and this
	// one, the oldest, was closed to make room for a newcomer.
	RefusedEvicted
	// RefusedTimeout: the handshake was not done within HandshakeTimeout.
	RefusedTimeout
	// RefusedSocket: the accepted socket could not be set up (a Unix
	// connection taken out of Go's poller).
	RefusedSocket
	refusalKinds // how many kinds there are
)

// refusalNames are the kinds' names, as logs and metric labels show them.
var refusalNames = [...]string{"none", "max_conns", "max_conns_per_addr", "max_pending_per_addr",
	"evicted", "handshake_timeout", "socket"}

func (k RefusalKind) String() string { return kindName(refusalNames[:], int(k), "RefusalKind") }

// ErrAdmission is what every refusal's error (ServerEvent.Err of
// EventRefused) wraps.
var ErrAdmission = errors.New("replica: connection refused")

// refusals is a server's refusal of each kind, made once by NewServer
// from its limits: the error told to Events and the ERROR frame the peer
// is sent, which says why (the mirror logs its text).
type refusals struct {
	err   [refusalKinds]error
	frame [refusalKinds][]byte
}

// refusalsLocked is the server's refusals (s.mu held), made at the first
// use: NewServer has set the limits' defaults by then.
func (s *Server) refusalsLocked() *refusals {
	if s.lim.why == nil {
		s.lim.why = newRefusals(&s.cfg, s.maxPendingPerAddr(), s.handshakeTimeout())
	}
	return s.lim.why
}

func newRefusals(cfg *ServerConfig, pendingPerAddr int, timeout time.Duration) *refusals {
	why := [refusalKinds]string{
		RefusedConns:       fmt.Sprintf("refused: the source has %d connections open, its limit (serve --max-conns)", cfg.MaxConns),
		RefusedAddr:        fmt.Sprintf("refused: %d connections from your address are open, the limit (serve --max-conns-per-addr)", cfg.MaxConnsPerAddr),
		RefusedAddrPending: fmt.Sprintf("refused: %d connections from your address are in their handshake or catch-up, the limit (serve --max-pending-per-addr)", pendingPerAddr),
		RefusedEvicted:     fmt.Sprintf("evicted: %d connections were in their handshake or catch-up (serve --max-pending), and this one was the oldest", cfg.MaxPending),
		RefusedTimeout:     fmt.Sprintf("the handshake was not done within %v (serve --handshake-timeout)", timeout),
		RefusedSocket:      "refused: the source could not set up the connection's socket",
	}
	r := new(refusals)
	for k := RefusedConns; k < refusalKinds; k++ {
		r.err[k] = fmt.Errorf("%w: %s", ErrAdmission, why[k])
		r.frame[k] = wire.AppendError(nil, why[k])
	}
	return r
}

// tellTimeout bounds the write of a refusal's ERROR frame: a peer that
// does not read is not waited for.
const tellTimeout = 100 * time.Millisecond

// tell sends the ERROR frame of refusal k on c, whose peer has been
// sent nothing else yet (or nothing since its TLS session was up).
func (s *Server) tell(c net.Conn, k RefusalKind) {
	s.mu.Lock()
	frame := s.refusalsLocked().frame[k]
	s.mu.Unlock()
	c.SetWriteDeadline(time.Now().Add(tellTimeout))
	c.Write(frame)
}

// told is the state of one kind's EventRefused: when it was last told,
// and how many of the kind were not told since (guarded by Server.mu).
type told struct {
	at         time.Time
	suppressed uint64
}

// refused counts a refusal of kind k and tells it to Events, at most
// once a second per kind: the event carries the count of those of its
// kind not told since the previous one (a flood must not flood the log
// too).
func (s *Server) refused(k RefusalKind, peer net.Addr) {
	s.st.refused.Add(1)
	s.st.refusedBy[k].Add(1)
	now := time.Now()
	s.mu.Lock()
	t := &s.lim.told[k]
	tell := t.at.IsZero() || now.Sub(t.at) >= time.Second
	suppressed, err := t.suppressed, s.refusalsLocked().err[k]
	if tell {
		t.at, t.suppressed = now, 0
	} else {
		t.suppressed++
	}
	s.mu.Unlock()
	if tell {
		s.emit(ServerEvent{Kind: EventRefused, Peer: peer, Err: err, Refusal: k, Suppressed: suppressed})
	}
}

// refuse refuses a connection at accept, for admit's refusal (or a
// socket that could not be set up): it is sent the ERROR frame saying why
// (on a keyed source too: the peer has not begun TLS, and a mirror's TLS
// client finds the frame among the bytes it read), closed, counted and
// told. A server that is closing closes it and counts nothing.
func (s *Server) refuse(c net.Conn, err error) {
	var re refusalError
	k := RefusedSocket
	switch {
	case errors.As(err, &re):
		k = RefusalKind(re)
	case errors.Is(err, ErrClosed):
		c.Close()
		return
	}
	s.tell(c, k)
	c.Close()
	s.refused(k, c.RemoteAddr())
}

// refusalStats fills in the refusals of each kind.
func (s *Server) refusalStats(out *ServerStats) {
	by := &s.st.refusedBy
	out.RefusedConns, out.RefusedAddr = by[RefusedConns].Load(), by[RefusedAddr].Load()
	out.RefusedAddrPending, out.Evicted = by[RefusedAddrPending].Load(), by[RefusedEvicted].Load()
	out.HandshakeTimeouts, out.RefusedSockets = by[RefusedTimeout].Load(), by[RefusedSocket].Load()
}

// RefusedOf is the count of refusals of kind k (0 for RefusedNone).
func (st ServerStats) RefusedOf(k RefusalKind) uint64 {
	switch k {
	case RefusedConns:
		return st.RefusedConns
	case RefusedAddr:
		return st.RefusedAddr
	case RefusedAddrPending:
		return st.RefusedAddrPending
	case RefusedEvicted:
		return st.Evicted
	case RefusedTimeout:
		return st.HandshakeTimeouts
	case RefusedSocket:
		return st.RefusedSockets
	}
	return 0
}

// RefusalKinds lists every kind of refusal, in order.
func RefusalKinds() []RefusalKind {
	ks := make([]RefusalKind, 0, refusalKinds-1)
	for k := RefusedConns; k < refusalKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}
