package replica

import "net"

// EventKind says what happened to a mirror connection.
type EventKind int

const (
	EventConnected    EventKind = iota // a mirror completed the handshake
	EventDisconnected                  // a mirror's connection ended (Err says why, nil: it hung up)
	EventRejected                      // a connection failed the handshake
	EventNoPunch                       // a unicast mirror never punched: served over TCP instead
)

func (k EventKind) String() string {
	return [...]string{"connected", "disconnected", "rejected", "no punch, falling back to TCP"}[k]
}

// Event reports a change of a mirror connection. The library never logs;
// ServerConfig.Events receives these (the CLI logs them).
type Event struct {
	Kind EventKind
	Peer net.Addr
	Err  error
}

func (s *Server) event(k EventKind, c net.Conn, err error) {
	if s.cfg.Events != nil {
		s.cfg.Events(Event{Kind: k, Peer: c.RemoteAddr(), Err: err})
	}
}
