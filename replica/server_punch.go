package replica

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/replica/wire"
)

// punchLoop receives PUNCH datagrams and adds their senders as unicast
// destinations of the session whose token they carry. Each receive waits
// at most 100 ms: in ppoll for kernel UDP; in Go's poller for AF_XDP and
// AF_PACKET, whose sockets are in it only during that wait, so that no
// datagram and no freed send buffer wakes a runtime thread nobody needs
// (AF_XDP sockets shared with a mirror that watches them are not even
// then: the mirror hands the PUNCH over). With a Loop and a transport
// that is a Peeker, the loop's turns receive them instead
// (punchesInLoop).
func (s *Server) punchLoop(ctx context.Context) {
	ms := punchBuffers()
	for ctx.Err() == nil && !s.closed.Load() {
		switch err := s.receivePunches(ms, 100*time.Millisecond); {
		case errors.Is(err, ErrClosed):
			return
		case err != nil:
			idle.Sleep(ctx, 10*time.Millisecond)
		}
	}
}

// punchesInLoop says the server's Loop receives its PUNCH datagrams.
func (s *Server) punchesInLoop() bool {
	_, peek := s.udp.(Peeker)
	return s.cfg.Loop != nil && peek
}

// punchBuffers are the receive buffers of one batch of PUNCH datagrams.
func punchBuffers() []Message {
	ms := make([]Message, 16)
	for i := range ms {
		ms[i].Buf = make([]byte, 2048)
	}
	return ms
}

// receivePunches receives one batch of datagrams into ms, waiting at
// most wait, and handles the PUNCHes among them (line B's of a unicast
// line B too); a failed receive is counted (badDgram) and returned.
func (s *Server) receivePunches(ms []Message, wait time.Duration) error {
	if l, ok := s.udp.(*lineSender); ok && l.uni != nil {
		a, b, err := l.recvPunches(ms, wait, func() { s.st.badDgram.Add(1) })
		for i := range a {
			s.punch(a[i].Buf[:a[i].N], a[i].Addr)
		}
		for i := range b {
			s.punchLineB(l.uni, b[i].Buf[:b[i].N], b[i].Addr)
		}
		return err
	}
	n, err := s.udp.RecvBatch(ms, wait)
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			s.st.badDgram.Add(1)
		}
		return err
	}
	for i := range n {
		s.punch(ms[i].Buf[:ms[i].N], ms[i].Addr)
	}
	return nil
}

func (s *Server) punch(b []byte, from netip.AddrPort) {
	h, err := wire.ParseHeader(b, 0)
	if err != nil || len(b) != wire.HeaderSize+s.overhead(false) || h.Kind != wire.KindPunch {
		s.st.badDgram.Add(1)
		return
	}
	s.mu.Lock()
	ss := s.sessions[uint32(h.Seq)]
	s.mu.Unlock()
	if s.keyed != nil && ss != nil {
		if _, err := ss.punchOpen.Open(b); err != nil {
			s.st.badPunch.Add(1) // forged, or replayed
			return
		}
	}
	if h.Flags != s.session || h.Seq>>32 != 0 || h.Count != 0 || ss == nil || !ss.unicast.Load() {
		s.st.badPunch.Add(1)
		return
	}
	// Without a key, only the host at the other end of the session's TCP
	// connection may say where its datagrams go: a PUNCH naming another
	// address (spoofed, or sent by a peer for someone else) would reflect
	// the stream onto it. Behind NAT the mirror's TCP and UDP flows leave
	// by the same public address (RFC 4787 paired pooling), so this holds
	// there too. With a key the PUNCH's seal (a key only this session's
	// two ends hold) is the proof, from whatever address the mirror's NAT
	// gives its UDP flow.
	if s.keyed == nil && from.Addr().Unmap() != ss.peer {
		s.st.badPunch.Add(1)
		return
	}
	old := ss.punched.Load()
	if old != nil && *old == from {
		return
	}
	if old == nil {
		// Datagrams reach this mirror from now on.
		ss.catchUpEnd.Store(s.lastSent.Load() + 1)
	}
	ss.punched.Store(&from)
	s.rebuildDests()
}
