package replica

import (
	"context"
	"time"
)

// loopSteps bounds the steps of one mirror, and the rounds of one sender,
// in a turn of a Loop: under load a member keeps up with its queue (a
// mirror between two turns waits for every other member), and no member
// holds the loop for long.
const loopSteps = 4

// mirrorMember is one connection of a mirror, stepped by a Loop: Run's
// idleRound without its wait, which the loop does for all its members.
type mirrorMember struct {
	m      *Mirror
	c      *conn
	pollFD []int
	peek   Peeker    // the transport, when it is one (nil: step every turn)
	next   time.Time // the next NAK repeat, punch or STATUS due (loop's goroutine)
	// failed receives the error that ended the connection (once); the
	// member steps no more after it (err, the loop's goroutine).
	failed chan error
	err    error
}

// runInLoop steps connection c on the mirror's Loop until it fails
// (returning its error) or ctx ends (nil). When it returns, the loop no
// longer steps the mirror, and what it applied is published.
func (m *Mirror) runInLoop(ctx context.Context, c *conn) error {
	mm := &mirrorMember{m: m, c: c, failed: make(chan error, 1)}
	if p, ok := c.udp.(Pollable); ok {
		mm.pollFD = p.PollFDs()
	}
	if c.direct != nil {
		mm.pollFD = []int{c.direct.fd}
	}
	mm.peek, _ = c.udp.(Peeker)
	l := m.cfg.Loop
	l.add(mm)
	var err error
	select {
	case err = <-mm.failed:
	case <-ctx.Done():
	}
	l.remove(mm)
	if m.dirty {
		m.publishStats(time.Now())
		m.dirty = false
	}
	return err
}

func (mm *mirrorMember) turn(now time.Time) bool {
	if mm.err != nil {
		return false
	}
	m := mm.m
	if mm.idle(now) {
		return false
	}
	n, err := mm.steps()
	if err != nil {
		mm.err = err
		mm.failed <- err
		return false
	}
	mm.next = now.Add(m.nextDue(mm.c, now)) // the step may have made a NAK due
	if n > 0 {
		m.dirty = true
		return true
	}
	if m.dirty { // the burst is over: make its counters visible before the loop sleeps
		m.publishStats(now)
		m.dirty = false
	}
	return false
}

// steps steps the connection until a step leaves nothing queued, at most
// loopSteps times. A fault on the mirror's ring (its file cut under its
// mapping; Loop.Run set the goroutine's fault guard) ends this member's
// connection with the error, as on a thread of its own, and not the
// Loop with every other member: its next session makes a fresh ring.
func (mm *mirrorMember) steps() (n int, err error) {
	defer mm.m.recoverRing(&err)
	for range loopSteps { // a full step may have left more queued
		k, _, err := mm.m.step(0)
		n += k
		if err != nil || k < stepLimit {
			return n, err
		}
	}
	return n, nil
}

// idle reports whether a step now would find nothing: no TCP frame or
// reader error queued, a transport that says nothing is pending (or
// none), and nothing due before mm.next. A mirror that reads its socket
// itself (direct) is never idle: only a read(2) tells, one per turn, a
// system call that returns EAGAIN at once when nothing came. The reader
// goroutine it replaces would wake a runtime thread in Go's poller for
// every frame; a saturated loop pays the read(2) on every turn instead.
func (mm *mirrorMember) idle(now time.Time) bool {
	c := mm.c
	if len(c.frames) > 0 || len(c.errc) > 0 || !now.Before(mm.next) {
		return false
	}
	switch {
	case c.udp == nil: // only TCP frames come: queued, or on the socket (direct)
		return c.direct == nil
	case mm.peek != nil:
		return !mm.peek.Pending(now)
	}
	return false
}

// due is what the last step found due next (mm.next): nothing that moves
// it happens between steps.
func (mm *mirrorMember) due(now time.Time) time.Duration {
	if mm.err != nil {
		return idleBound
	}
	return mm.next.Sub(now)
}

func (mm *mirrorMember) fds() []int { return mm.pollFD }

func (mm *mirrorMember) sleep(time.Duration) {}

// pending: the TCP reader queued a frame or its error (it notifies the
// loop's Waker after queueing).
func (mm *mirrorMember) pending() bool {
	return mm.err == nil && (len(mm.c.frames) > 0 || len(mm.c.errc) > 0)
}
