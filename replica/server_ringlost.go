package replica

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ringfire/ringfire/shm"
)

// ErrRingTruncated: the served ring file was cut under its mapping
// (truncated by another process); serve it again once a valid ring is
// at the path. The error also wraps the *shm.FaultError naming the file.
var ErrRingTruncated = errors.New("replica: the ring file was cut under its mapping")

// lose ends serving a ring whose file was cut under its mapping, as a
// replaced ring ends it: every connection is closed and every goroutine
// of Serve ends; Serve returns ErrRingTruncated with err, the first
// fault's error (a *shm.FaultError naming the file).
func (s *Server) lose(err error) {
	s.lostOnce.Do(func() {
		s.lostErr = err
		close(s.lost)
		s.closeSessions()
		if s.endRun != nil {
			s.endRun()
		}
	})
}

// lostError is what Serve returns for a ring cut under its mapping.
func (s *Server) lostError() error {
	return fmt.Errorf("serve %s: %w: %w", s.cfg.Ring, ErrRingTruncated, s.lostErr)
}

// guard is shm.Guard, for the goroutines that defer guardRing.
func guard() bool { return shm.Guard() }

// guardRing, deferred with guard's result at the top of a goroutine of
// Serve that reads the ring (the sender, a session's writer and reader),
// makes a fault on the ring the end of serving it (lose), not of the
// process. Any other panic goes on.
func (s *Server) guardRing(old bool) {
	r := recover()
	debug.SetPanicOnFault(old)
	if r != nil {
		s.faulted(r)
	}
}

// guardServe is guardRing for Serve's own goroutine (a graceful stop
// reads the ring): Serve then returns ErrRingTruncated.
func (s *Server) guardServe(old bool, err *error) {
	r := recover()
	debug.SetPanicOnFault(old)
	if r != nil {
		s.faulted(r)
		*err = s.lostError()
	}
}

// recoverRound, deferred by a sender round, makes a fault on the ring in
// the round (its goroutine set the guard) the end of serving it and lets
// the round return, so that its caller releases sendMu as always.
func (s *Server) recoverRound() {
	if r := recover(); r != nil {
		s.faulted(r)
	}
}

// waitAll waits for the goroutines Serve started. Once the ring is lost,
// a direct send that faulted on a thread not ours (a hub's Handoff, on
// its mirror's thread, whose own guard took the fault) may have left its
// stream taken, and that session's writer waits for it: taken streams
// are given back until every goroutine has ended.
func (s *Server) waitAll() {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-s.lost:
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		s.giveBackStreams()
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// giveBackStreams gives every taken stream back to its writer.
func (s *Server) giveBackStreams() {
	for _, ss := range *s.streams.Load() {
		ss.owner.CompareAndSwap(ownerSender, ownerParked)
	}
}

// faulted loses the ring for r, a recovered fault on its mapping, and
// panics again with anything else. A fault in a direct send
// (server_direct.go: the sender, a Handoff, a Loop turn) leaves the
// stream it took taken, and its writer waits for it: every taken stream
// is given back. One taken by a send still under way on another thread
// is given back too, but the ring is lost, every connection closed and
// the writers' context ended: they only return.
func (s *Server) faulted(r any) {
	err := shm.Fault(r)
	if err == nil {
		panic(r)
	}
	s.lose(err)
	s.giveBackStreams()
}
