package replica

import (
	"context"
	"time"
)

// mirrorMember is one connection of a mirror, stepped by a Loop: Run's
// idleRound without its wait, which the loop does for all its members.
type mirrorMember struct {
	m      *Mirror
	c      *conn
	pollFD []int
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
	if p, ok := c.udp.(Pollable); ok && c.udp != nil {
		mm.pollFD = p.PollFDs()
	}
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
	n, err := m.step(0)
	if err != nil {
		mm.err = err
		mm.failed <- err
		return false
	}
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

func (mm *mirrorMember) due(now time.Time) time.Duration {
	if mm.err != nil {
		return idleBound
	}
	return mm.m.nextDue(mm.c, now)
}

func (mm *mirrorMember) fds() []int { return mm.pollFD }

func (mm *mirrorMember) sleep(time.Duration) {}
