package replica

import (
	"fmt"
	"net"
	"net/netip"
)

// ServerEventKind says what happened to a mirror connection of a Server
// (MirrorEventKind is its counterpart on the Mirror's side).
type ServerEventKind int

// EventKind is the former name of ServerEventKind.
//
// Deprecated: use ServerEventKind.
type EventKind = ServerEventKind

const (
	EventConnected    ServerEventKind = iota // a mirror completed the handshake
	EventDisconnected                        // a mirror's connection ended (Err says why, nil: it hung up)
	EventRejected                            // a connection failed the handshake
	EventNoPunch                             // a unicast mirror never punched: served over TCP instead
	// EventLagging: a mirror's lag passed half the ring's capacity (it is
	// about to gap). Raised once per crossing; Mirror is its row.
	EventLagging
	// EventLagRecovered: a lagging mirror is back within a quarter of the
	// ring's capacity. Mirror is its row.
	EventLagRecovered
	// EventRefused: a connection was refused, or dropped before it was
	// live, for a limit (Refusal says which, Err says why). Told at most
	// once a second per RefusalKind, with the count of that kind's
	// refusals not told since (Suppressed); ServerStats.Refused counts
	// them all.
	EventRefused
	// EventAcceptFailed: accepting failed for want of file descriptors or
	// memory (Err); Serve backs off and keeps accepting. Told once per
	// burst of failures; ServerStats.AcceptErrors counts them all.
	EventAcceptFailed
)

var eventNames = [...]string{"connected", "disconnected", "rejected", "no punch, falling back to TCP",
	"lagging: past half the ring's capacity", "lag recovered", "refused", "accept failed, backing off"}

func (k ServerEventKind) String() string { return kindName(eventNames[:], int(k), "ServerEventKind") }

// kindName is names[k], or type(k) for a kind without a name.
func kindName(names []string, k int, typ string) string {
	if k >= 0 && k < len(names) {
		return names[k]
	}
	return fmt.Sprintf("%s(%d)", typ, k)
}

// ServerEvent reports a change of a mirror connection of a Server. The
// library never logs; ServerConfig.Events receives these (the CLI logs
// them).
type ServerEvent struct {
	Kind ServerEventKind
	Peer net.Addr
	Err  error
	// Mirror is the mirror's row in the table, for the lag events.
	Mirror MirrorInfo
	// Refusal is why an EventRefused's connection was refused, and
	// Suppressed how many refusals of that kind were not told since the
	// previous EventRefused of the kind (RefusedNone and 0 for other
	// events).
	Refusal    RefusalKind
	Suppressed uint64
}

// Event is the former name of ServerEvent.
//
// Deprecated: use ServerEvent.
type Event = ServerEvent

func (s *Server) event(k ServerEventKind, c net.Conn, err error) {
	s.emit(ServerEvent{Kind: k, Peer: c.RemoteAddr(), Err: err})
}

func (s *Server) emit(e ServerEvent) {
	if s.cfg.Events != nil {
		s.cfg.Events(e)
	}
}

// tcpAddr is a as a net.Addr (nil when it is not valid).
func tcpAddr(a netip.AddrPort) net.Addr {
	if !a.IsValid() {
		return nil
	}
	return net.TCPAddrFromAddrPort(a)
}
