package replica

import (
	"context"
	"time"
)

// telemetryLoop samples write_seq, raises and clears lag warnings and
// forgets mirrors that left too long ago, until ctx ends. It looks every
// seqSampleEvery while write_seq moves; once it stood still for a tick,
// every seqIdleEvery, until the sender sees it move and wakes it
// (teleIdle, teleWake): an idle source does not wake 100 times a second.
func (s *Server) telemetryLoop(ctx context.Context) {
	t := time.NewTimer(seqSampleEvery)
	defer t.Stop()
	last := s.ring.WriteSeq()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.teleWake:
			t.Stop() // Go 1.23 timers: no stale tick after Stop or Reset
		}
		w := s.ring.WriteSeq()
		for _, e := range s.tele.tick(w, time.Now(), s.cfg.MirrorRetention) {
			s.emit(e)
		}
		next := seqSampleEvery
		if w == last {
			s.teleIdle.Store(true)
			if s.ring.WriteSeq() == w { // moved since: the sender may have missed the flag
				next = seqIdleEvery
			} else {
				s.teleIdle.Store(false)
			}
		}
		last = w
		t.Reset(next)
	}
}

// wakeTelemetry wakes an idle telemetry loop (the sender, when write_seq
// moved), through the relay (fireWakes), as the sessions are.
func (s *Server) wakeTelemetry() {
	if s.teleIdle.Load() && s.teleIdle.CompareAndSwap(true, false) {
		s.teleDue.Store(true)
		s.relay.Kick()
	}
}

// tick samples write_seq w and returns the lag events due: EventLagging
// when a mirror's lag passes half the ring's capacity, EventLagRecovered
// once it is back to a quarter (one event per crossing).
func (t *telemetry) tick(w uint64, now time.Time, retention time.Duration) []ServerEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index.add(w, now)
	var events []ServerEvent
	for k := 0; k < len(t.rows); k++ {
		r := t.rows[k]
		if r.ss == nil && now.Sub(r.left) > retention {
			t.remove(r)
			k--
			t.broadcast()
			continue
		}
		if !r.info.Reported || (r.ss != nil && !r.ss.live()) {
			continue // a mirror still catching up is behind by design
		}
		i := t.infoOf(r, w, now)
		switch {
		case !r.info.Lagging && i.LagRecords > t.half:
			r.info.Lagging, i.Lagging = true, true
			events = append(events, ServerEvent{Kind: EventLagging, Peer: tcpAddr(i.Addr), Mirror: i})
		case r.info.Lagging && i.LagRecords <= t.quarter:
			r.info.Lagging, i.Lagging = false, false
			events = append(events, ServerEvent{Kind: EventLagRecovered, Peer: tcpAddr(i.Addr), Mirror: i})
		}
	}
	return events
}

// close wakes every AwaitApplied for good.
func (t *telemetry) close() {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		t.broadcast()
	}
	t.mu.Unlock()
}
