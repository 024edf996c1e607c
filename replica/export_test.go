package replica

import (
	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/replica/wire"
)

// QueuedFrames is how many control frames the mirror's reader has queued
// for the next Step (0 when not connected): tests wait on it instead of
// sleeping.
func QueuedFrames(m *Mirror) int {
	if m.c == nil {
		return 0
	}
	if m.c.direct != nil {
		return m.c.direct.whole()
	}
	return len(m.c.frames)
}

// AfterDatagram sets a hook the mirror calls after it applied and
// published each datagram of a receive batch, with the datagram's index in
// the batch, the last sequence it carries and the last the batch carries
// (tests check that readers see records before the batch ends).
func AfterDatagram(m *Mirror, hook func(i int, last, batchLast uint64)) { m.afterDatagram = hook }

// StopGrace bounds a graceful stop (server_stop.go).
const StopGrace = stopGrace

// LoopTurner turns a Loop that does not Run, from the test's goroutine:
// one turn through every member, without waiting.
type LoopTurner struct {
	l       *Loop
	watched *[]member
}

// NewLoopTurner drives l, which must not Run.
func NewLoopTurner(l *Loop) *LoopTurner { return &LoopTurner{l: l} }

// Turn runs one turn and reports whether a member found work.
func (t *LoopTurner) Turn() bool {
	busy, _, _ := t.l.turn(&t.watched)
	return busy
}

// RelayStats are the counts of the server's wake relay.
func RelayStats(s *Server) idle.RelayStats { return s.relay.Stats() }

// LiveSessions counts the sessions whose records the datagrams carry.
func LiveSessions(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		if ss.mode.Load() == modeLive {
			n++
		}
	}
	return n
}

// StatusRelayStats are the counts of the status writer of the mirror's
// connection (zero when not connected, or without telemetry); call it from
// the goroutine that steps the mirror.
func StatusRelayStats(m *Mirror) idle.RelayStats {
	if m.c == nil || m.c.statusRelay == nil {
		return idle.RelayStats{}
	}
	return m.c.statusRelay.Stats()
}

// DirectTCP reports whether the mirror's run loop reads its control
// connection itself (no reader goroutine); call it from the goroutine that
// steps the mirror.
func DirectTCP(m *Mirror) bool { return m.c != nil && m.c.direct != nil }

// whole counts the whole frames the buffer holds after reading what the
// socket has (tests: what one Step will meet).
func (t *tcpReader) whole() int {
	for t.fill() && t.err == nil {
	}
	n := 0
	for r := t.r; t.w-r >= wire.HeaderSize; n++ {
		h, err := wire.ParseHeader(t.buf[r:t.w], t.maxLen)
		if err != nil || t.w-r < wire.HeaderSize+int(h.Len) {
			break
		}
		r += wire.HeaderSize + int(h.Len)
	}
	return n
}

// HoldStream takes a parked stream writer's stream as a sender would
// (nil: no writer is parked); release gives it back as that sender does
// once its frames are written, and reports whether it found the writer
// needed.
func HoldStream(s *Server) (release func() bool) {
	for _, ss := range *s.streams.Load() {
		if ss.take() {
			return func() bool { return ss.giveBack(false, directPasses) }
		}
	}
	return nil
}

// AfterDirectWrite sets a hook a direct send calls right after its
// write(2) of a session's frames, before it returns (tests hold it there
// while the mirror applies and reports them).
func AfterDirectWrite(s *Server, hook func()) { s.afterDirectWrite = hook }

// DirectFD is the descriptor a direct mirror's run loop reads (-1 when it
// reads no socket itself); call it from the goroutine that steps the
// mirror.
func DirectFD(m *Mirror) int {
	if m.c == nil || m.c.direct == nil {
		return -1
	}
	return m.c.direct.fd
}

// SessionSockets is the descriptor of each session whose connection is
// out of Go's poller (a Unix socket's); -1 for the others.
func SessionSockets(s *Server) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fds []int
	for _, ss := range s.sessions {
		fd := -1
		if rc, ok := ss.raw.(*rawConn); ok {
			rc.ops.RLock()
			fd = rc.fd
			rc.ops.RUnlock()
		}
		fds = append(fds, fd)
	}
	return fds
}
