package replica

import (
	"crypto/rand"
	"encoding/binary"
	"net/netip"
)

// register adds a session under a fresh unguessable token.
func (s *Server) register(ss *session) {
	s.mu.Lock()
	for {
		var b [4]byte
		rand.Read(b[:])
		if t := binary.LittleEndian.Uint32(b[:]); t != 0 && s.sessions[t] == nil {
			ss.token = t
			s.sessions[t] = ss
			break
		}
	}
	s.mu.Unlock()
	s.rebuildDests()
}

func (s *Server) unregister(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss.token)
	s.mu.Unlock()
	s.rebuildDests()
}

// rebuildDests publishes the unicast destinations of punched sessions and
// the wake channels of all sessions. It stores them under s.mu: two
// rebuilds racing must not publish the older table last.
func (s *Server) rebuildDests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d []dest
	var direct []*session
	w := make([]chan struct{}, 0, len(s.sessions))
	for _, ss := range s.sessions {
		if ss.rawc != nil {
			direct = append(direct, ss)
		}
		if a := ss.punched.Load(); a != nil && ss.mode.Load() != modeStream {
			d = append(d, dest{addr: *a, wide: ss.wide})
		}
		w = append(w, ss.wake)
	}
	s.dests.Store(&d)
	s.routeLines() // line B's copies of d (lines_unicast.go)
	s.wakes.Store(&w)
	s.streams.Store(&direct)
}

// wakeSessions tells the sessions that sleep on their wake channel that
// the ring moved (any goroutine, the sender's hot thread among them): the
// relay's goroutine wakes them (fireWakes).
func (s *Server) wakeSessions() {
	if s.directWrites() || s.listening.Load() != 0 {
		s.sessionKicks.Add(1)
		s.sessionsDue.Store(true)
		s.relay.Kick()
	}
}

// fireWakes sends on every session's wake channel when wakeSessions
// asked, and on the telemetry loop's when wakeTelemetry did (the relay's
// goroutine).
func (s *Server) fireWakes() {
	if s.teleDue.Swap(false) {
		select {
		case s.teleWake <- struct{}{}:
		default:
		}
	}
	if !s.sessionsDue.Swap(false) {
		return
	}
	for _, c := range *s.wakes.Load() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// dest is a unicast destination of the datagram stream; wide: it takes
// the wide session's trailer.
type dest struct {
	addr netip.AddrPort
	wide bool
}

// anyWide reports whether a round's datagrams need the trailer.
func (s *Server) anyWide(dests []dest) bool {
	if s.cfg.Multicast.IsValid() && s.cfg.WideMulticast {
		return true
	}
	for _, d := range dests {
		if d.wide {
			return true
		}
	}
	return false
}
