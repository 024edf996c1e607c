package replica

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
)

// A graceful stop: Serve's context ended (SIGTERM in the CLI), as opposed
// to Close or a replaced ring, which close everything at once. In order:
//
//  1. Serve stops accepting and notes the ring's write_seq (the stop's
//     last record).
//  2. The sender, under sendMu, sends as datagrams every record up to it
//     that the datagram stream has not carried, ignoring the linger, in at
//     most stopRounds rounds, then a heartbeat announcing the last
//     sequence sent to the group and every unicast destination; no round
//     runs after it (stop.halted). lastSent is final from then on.
//  3. Connections still in their handshake (no session yet) are closed;
//     every session is told (stop.begun). Its writer sends over TCP what
//     its mirror will not get by datagram (the rest of a catch-up
//     history, or of a TCP stream, up to the stop's last record), then a
//     TCP heartbeat naming the last record it is owed (for a datagram
//     mirror lastSent), so a mirror that lost the final datagrams hears of
//     them on a reliable path. The session's reader keeps answering NAKs.
//  4. The writer closes its side (FIN, or TLS close_notify, after every
//     queued byte) once the mirror has applied everything it is owed (a
//     telemetry mirror's STATUS says so; one whose last records were lost
//     to the ring, and so never applied, waits for the deadline), or, for
//     a version-1 mirror, which says nothing, once nothing was written
//     (a NAK answer, the heartbeat) for stopQuiet; at the latest at the
//     deadline. It then waits, at most until the deadline, for the mirror
//     to read what is on its way and close its end, so that closing never
//     resets a connection with data unread.
//  5. stopGrace after ctx ended, Serve closes every connection left (a
//     peer that never reads cannot hold the stop) and returns.
//
// Records published after step 1 are not owed: the producer may go on.

const (
	// stopGrace bounds a graceful stop, from the end of Serve's context
	// to the last connection closed.
	stopGrace = time.Second
	// stopQuiet: the session of a mirror without telemetry closes its
	// side in a graceful stop when nothing was written (a NAK answer, its
	// heartbeat) for this long: its NAKs come within a round trip of the
	// heartbeat, a loaded host's scheduling delays included.
	stopQuiet = 500 * time.Millisecond
	// stopRounds bounds the sender's last rounds (each up to sendFrames
	// frames: 1024 rounds are about 48 MB at the default MTU).
	stopRounds = 1024
)

// stopState is a Server's graceful stop.
type stopState struct {
	// begun is closed (once, by gracefulStop, after the sender's last
	// datagram) when the stop begins: the sessions' writers select on it.
	// Made by NewServer.
	begun chan struct{}
	// by, last: stored by gracefulStop before begun is closed. by is the
	// stop's deadline (unix ns; 0: no stop), which bounds every write from
	// then on and tells the readers (which do not select on begun) to wake
	// their writer after a NAK or STATUS; last is the ring's write_seq
	// when ctx ended, the end of a TCP stream's duty.
	by   atomic.Int64
	last atomic.Uint64
	// halted is stored true under Server.sendMu once the sender's last
	// datagram is sent: no sender round runs after it.
	halted atomic.Bool
	// conns counts serveConn goroutines (Added by the accept loop only).
	conns sync.WaitGroup
}

// deadline is the stop's deadline (zero: no stop).
func (st *stopState) deadline() time.Time {
	if by := st.by.Load(); by != 0 {
		return time.Unix(0, by)
	}
	return time.Time{}
}

// gracefulStop runs the graceful stop (see above) on Serve's goroutine,
// the listener closed; it returns once every connection is closed, or the
// stop's deadline has passed and the ones left were closed, or run ended.
func (s *Server) gracefulStop(run context.Context) {
	by := time.Now().Add(stopGrace)
	last := s.ring.WriteSeq()
	s.sendMu.Lock()
	if s.udp != nil {
		s.sender.Load().finish(last, by) // Serve stored it before starting anything
	}
	s.stop.halted.Store(true)
	s.sendMu.Unlock()
	s.stop.by.Store(by.UnixNano())
	s.stop.last.Store(last)
	close(s.stop.begun)
	s.closeUnregistered()
	done := make(chan struct{})
	go func() { s.stop.conns.Wait(); close(done) }()
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-run.Done():
	}
	s.closeSessions() // the sessions left: stuck peers
}

// finish is the sender's part of a graceful stop (s.sendMu held): every
// record up to last that the datagram stream has not carried leaves now,
// linger or not, in at most stopRounds rounds and before by; then a
// heartbeat announces the last sequence sent.
func (sn *sender) finish(last uint64, by time.Time) {
	s := sn.s
	sn.final = true
	for i := 0; i < stopRounds && sn.next <= last && !s.closed.Load() && time.Now().Before(by); i++ {
		sn.roundTo(time.Now(), last)
	}
	dests := *s.dests.Load()
	if s.closed.Load() || len(dests) == 0 && !s.cfg.Multicast.IsValid() {
		return
	}
	sn.wide = s.anyWide(dests)
	sn.heartbeat(time.Now(), dests)
}

// closeUnregistered closes the connections that have no session yet (in
// the handshake, or a keyed one's TLS handshake): a graceful stop owes
// them nothing, and a peer that never says HELLO would hold it.
func (s *Server) closeUnregistered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	reg := make(map[net.Conn]bool, len(s.sessions))
	for _, ss := range s.sessions {
		reg[ss.raw] = true
	}
	for c := range s.lim.open {
		if !reg[c] {
			c.Close()
		}
	}
}

// finish is a session's part of a graceful stop, on its writer goroutine
// (steps 3 and 4 above). The sender has sent its last datagram, so
// lastSent is final.
func (ss *session) finish(ctx context.Context) error {
	s := ss.srv
	ss.finishing = true
	by := s.stop.deadline()
	end := s.lastSent.Load() // what a datagram mirror is owed
	switch mode := ss.mode.Load(); {
	case mode == modeCatchUp && ss.catchUpEnd.Load() != 0:
		// The history up to where the datagrams took over, then live:
		// the heartbeat below ends the mirror's catch-up.
		if err := ss.sendUpTo(ctx, ss.catchUpEnd.Load()-1); err != nil {
			return err
		}
		ss.mode.Store(modeLive)
		ss.wentLive()
	case mode != modeLive:
		// TCP carries this mirror's stream (or will: a unicast mirror
		// that has not punched gets no datagram any more).
		if mode == modeCatchUp {
			ss.mode.Store(modeStream)
			ss.wentLive()
		}
		if err := ss.sendUpTo(ctx, max(s.stop.last.Load(), ss.cursor-1)); err != nil {
			return err
		}
		end = ss.cursor - 1
	}
	if err := ss.heartbeat(end); err != nil {
		return err
	}
	ss.askReport(end) // a mirror that reports on ask says at once when it has everything
	if err := ss.reportIfAsked(); err != nil {
		return err
	}
	for ctx.Err() == nil {
		now := time.Now()
		wait, done := by.Sub(now), ss.telemetry && ss.applied.Load() >= end
		if !ss.telemetry { // nothing will say it is done: a quiet spell will
			quiet := time.Unix(0, ss.lastWrite.Load()).Add(stopQuiet).Sub(now)
			wait, done = min(wait, quiet), quiet <= 0
		}
		if done || wait <= 0 {
			break
		}
		ss.sleep(ctx, wait, true) // the reader wakes it after a STATUS or NAK
	}
	ss.shutWrite()
	// The mirror reads what is on its way, sees the end and closes: the
	// reader then ends, and with it ctx.
	if d := time.Until(by); d > 0 && ctx.Err() == nil {
		idle.Sleep(ctx, d)
	}
	return nil
}

// sendUpTo sends the records from the cursor up to to over TCP.
func (ss *session) sendUpTo(ctx context.Context, to uint64) error {
	for ss.cursor <= to && ctx.Err() == nil {
		var err error
		if ss.buf, ss.cursor, err = ss.sendPaced(ss.feed, ss.buf, ss.cursor, to, false, ss.writeFrames, nil, ss.hist); err != nil {
			return err
		}
	}
	return nil
}

// shutWrite closes the connection's sending side after every frame
// written (a FIN, or TLS's close_notify); NAKs are no longer answered.
func (ss *session) shutWrite() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.shut.Store(true)
	if ss.bw.Flush() != nil {
		return
	}
	type closeWriter interface{ CloseWrite() error }
	if cw, ok := ss.tcp.(closeWriter); ok { // TLS: close_notify
		cw.CloseWrite()
	} else if cw, ok := ss.raw.(closeWriter); ok { // the TCP connection under a plain session's wrapper
		cw.CloseWrite()
	}
}

// poke wakes the session's writer if it sleeps (capacity 1, never
// blocking).
func (ss *session) poke() {
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}
