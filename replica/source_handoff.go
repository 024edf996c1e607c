package replica

import "time"

// Handoff runs one sender round on the caller's goroutine: what the ring
// holds and the datagram stream has not carried leaves now, and the TCP
// sessions are woken, without waking the sender. It is for a mirror served
// again in the same process (a hub): pass it as MirrorConfig.Published and
// each datagram's records go out on the goroutine that applied them, one
// hop and no wake-up.
//
// If the sender is running a round itself, Handoff returns at once: that
// round, or the wait after it (which checks write_seq before sleeping),
// sees the new records. It never blocks, never allocates, and does nothing
// before Serve has started or after Close.
func (s *Server) Handoff(uint64) {
	sn := s.sender.Load()
	if sn == nil || s.closed.Load() {
		return
	}
	if s.udp != nil && s.sendMu.TryLock() {
		sn.round(time.Now())
		s.sendMu.Unlock()
		s.st.handoffs.Add(1)
	}
	s.wakeSessions()
	s.wakeTelemetry()
}
