package replica

import (
	"context"
	"time"
)

const (
	// seqSampleEvery is how often the source samples its ring's write_seq
	// to date records (the resolution of MirrorInfo.Lag).
	seqSampleEvery = 10 * time.Millisecond
	// seqSamples is how many samples are kept: at least 80 s of history
	// under constant load (a sample is taken only when write_seq moved).
	seqSamples = 8192
	// DefaultMirrorRetention is how long a mirror that left stays in the
	// table.
	DefaultMirrorRetention = 10 * time.Minute
)

// seqSample says that write_seq was first seen at seq at time at.
type seqSample struct {
	seq uint64
	at  int64 // unix nanoseconds
}

// seqIndex is a bounded history of the ring's write_seq: increasing
// sequences with the time each was first seen.
type seqIndex struct {
	s     [seqSamples]seqSample
	head  int // index of the oldest sample
	n     int
	last  uint64
	lastT int64
}

// add records write_seq w seen at now (nothing if it did not move).
func (x *seqIndex) add(w uint64, now time.Time) {
	if x.n > 0 && w <= x.last {
		return
	}
	x.last, x.lastT = w, now.UnixNano()
	i := (x.head + x.n) % seqSamples
	if x.n == seqSamples {
		x.head = (x.head + 1) % seqSamples
	} else {
		x.n++
	}
	x.s[i] = seqSample{seq: w, at: x.lastT}
}

// age is how long ago the source first saw a write_seq beyond applied:
// the age of the oldest record after applied, to a sample's resolution.
// When that record is older than the history, it is the age of the oldest
// sample (a lower bound). Nothing beyond applied seen yet: 0.
func (x *seqIndex) age(applied uint64, now time.Time) time.Duration {
	if x.n == 0 || x.last <= applied {
		return 0
	}
	// The first sample with seq > applied (samples increase).
	lo, hi := 0, x.n-1
	for lo < hi {
		mid := (lo + hi) / 2
		if x.s[(x.head+mid)%seqSamples].seq > applied {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(time.Duration(now.UnixNano()-x.s[(x.head+lo)%seqSamples].at), 0)
}

// telemetryLoop samples write_seq, raises and clears lag warnings and
// forgets mirrors that left too long ago, until ctx ends.
func (s *Server) telemetryLoop(ctx context.Context) {
	t := time.NewTicker(seqSampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, e := range s.tele.tick(s.ring.WriteSeq(), now, s.cfg.MirrorRetention) {
				s.emit(e)
			}
		}
	}
}

// tick samples write_seq w and returns the lag events due: EventLagging
// when a mirror's lag passes half the ring's capacity, EventLagRecovered
// once it is back to a quarter (one event per crossing).
func (t *telemetry) tick(w uint64, now time.Time, retention time.Duration) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index.add(w, now)
	var events []Event
	for k := 0; k < len(t.rows); k++ {
		r := t.rows[k]
		if r.ss == nil && now.Sub(r.left) > retention {
			t.remove(r)
			k--
			t.broadcast()
			continue
		}
		if !r.info.Reported {
			continue
		}
		i := t.infoOf(r, w, now)
		switch {
		case !r.info.Lagging && i.LagRecords > t.half:
			r.info.Lagging, i.Lagging = true, true
			events = append(events, Event{Kind: EventLagging, Peer: tcpAddr(i.Addr), Mirror: i})
		case r.info.Lagging && i.LagRecords <= t.quarter:
			r.info.Lagging, i.Lagging = false, false
			events = append(events, Event{Kind: EventLagRecovered, Peer: tcpAddr(i.Addr), Mirror: i})
		}
	}
	return events
}

// close wakes every Wait for good.
func (t *telemetry) close() {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		t.broadcast()
	}
	t.mu.Unlock()
}
