package replica

import (
	"fmt"
	"sort"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// Mirror-side sequencing limits (wire spec).
const (
	// MaxHeld is how many datagrams a mirror holds ahead of a hole.
	MaxHeld = 8192
	// NakRepeat is how long a NAK stays outstanding before it is repeated.
	NakRepeat = 20 * time.Millisecond
)

// recordSink receives records strictly in sequence order, and the holes
// (gaps) between them.
type recordSink interface {
	write(seq uint64, slot, blob []byte) error
	skip(next uint64) // sequences before next will never come
}

// heldFrame is a DATA frame that arrived ahead of a hole.
type heldFrame struct {
	h   wire.Header
	p   []byte // payload, a view of buf
	buf []byte
}

// sequencer turns DATA frames arriving in any order, duplicated or
// repeated, into records written once each, in order, at next. It holds
// frames that overtake a hole and decides when to NAK. It is pure logic:
// no sockets, no clock of its own.
type sequencer struct {
	shape wire.Shape
	out   recordSink
	stats *MirrorStats

	next uint64      // next sequence to write
	held []heldFrame // ahead of a hole, sorted by first sequence
	free [][]byte    // spare buffers for held frames
	hb   uint64      // highest "last sent" heard in heartbeats
	seen uint64      // highest sequence seen in any frame or heartbeat

	nakOut       bool
	nakLast      uint64
	nakAt        time.Time
	suppressNaks bool // a catch-up over TCP is filling the holes
	// queued: the last receive filled its batch, so more datagrams may be
	// waiting at this end (set by the mirror every step). withholder
	// (nil: none) is the connection's datagram transport when it can tell
	// datagrams it holds back (set as the mirror opens it). hbHole: when a
	// hole that only a heartbeat shows was first seen (zero: none).
	queued         bool
	withholder     Withholder
	hbHole         time.Time
	hbHoleFrom     uint64 // the next sequence when hbHole was set: a hole that moved is a new one
	tcpOnly        bool   // every record comes over TCP
	maxHeld        int
	nakRecordLimit uint64
	// pendingGap (0: none) is the next sequence of a TCP GAP past what the
	// source had announced (seen), not applied until a record or a
	// heartbeat announces the one before it; pendingSince is when the
	// mirror first looked at it (pendingGapDue).
	pendingGap   uint64
	pendingSince time.Time
	// window (0: none) is the arbitration window of two lines (A/B): a
	// hole is NAKed only once it has lasted this long, since the other
	// line may still fill it; hole is when the current hole was first
	// seen, holeFrom the next sequence then (a hole that moved is new).
	window   time.Duration
	hole     time.Time
	holeFrom uint64
}

func newSequencer(shape wire.Shape, next uint64, out recordSink, stats *MirrorStats) *sequencer {
	return &sequencer{shape: shape, out: out, stats: stats, next: next, maxHeld: MaxHeld, nakRecordLimit: wire.MaxNakRecords}
}

// data handles a DATA frame already checked by Shape.CheckData. viaTCP
// tells a retransmission or catch-up from a datagram.
func (s *sequencer) data(h wire.Header, p []byte, viaTCP bool) error {
	end := h.Seq + uint64(h.Count) // exclusive
	s.seen = max(s.seen, end-1)
	switch {
	case end <= s.next:
		if viaTCP {
			s.stats.Stale++
		} else {
			s.stats.Duplicates++
		}
		return nil
	case h.Seq > s.next:
		s.hold(h, p)
		return nil
	}
	if err := s.apply(h, p, viaTCP); err != nil {
		return err
	}
	return s.drain()
}

// apply writes the records of a frame that starts at or before next.
func (s *sequencer) apply(h wire.Header, p []byte, viaTCP bool) error {
	it := s.shape.NewRecords(h, p)
	for {
		seq, slot, blob, ok := it.Next()
		if !ok {
			return nil
		}
		if seq < s.next {
			continue
		}
		if err := s.out.write(seq, slot, blob); err != nil {
			return err
		}
		s.next = seq + 1
		s.stats.Records++
		switch {
		case !viaTCP:
		case s.suppressNaks || s.tcpOnly:
			s.stats.CatchUp++
		default:
			s.stats.Retransmitted++
		}
	}
}

// drain applies held frames that the advancing next has reached.
func (s *sequencer) drain() error {
	k := 0
	defer func() { s.held = append(s.held[:0], s.held[k:]...) }()
	for ; k < len(s.held) && s.held[k].h.Seq <= s.next; k++ {
		f := s.held[k]
		s.free = append(s.free, f.buf)
		if f.h.Seq+uint64(f.h.Count) <= s.next {
			s.stats.Stale++
		} else if err := s.apply(f.h, f.p, false); err != nil {
			k++
			return err
		}
	}
	if s.nakOut && s.next > s.nakLast {
		s.nakOut = false
	}
	return nil
}

// hold keeps a copy of a frame that overtook a hole.
func (s *sequencer) hold(h wire.Header, p []byte) {
	i := sort.Search(len(s.held), func(i int) bool { return s.held[i].h.Seq >= h.Seq })
	if i < len(s.held) && s.held[i].h.Seq == h.Seq {
		s.stats.Duplicates++
		return
	}
	if len(s.held) >= s.maxHeld {
		s.stats.Overflow++
		return
	}
	buf := s.buffer(len(p))
	copy(buf, p)
	s.held = append(s.held, heldFrame{})
	copy(s.held[i+1:], s.held[i:])
	s.held[i] = heldFrame{h: h, p: buf[:len(p)], buf: buf}
}

func (s *sequencer) buffer(n int) []byte {
	for i := len(s.free) - 1; i >= 0; i-- {
		if b := s.free[i]; cap(b) >= n {
			s.free[i] = s.free[len(s.free)-1]
			s.free = s.free[:len(s.free)-1]
			return b[:n]
		}
	}
	return make([]byte, n, max(n, MaxMTU))
}

// gap skips to next: the source no longer holds what lies before it.
func (s *sequencer) gap(next uint64) error {
	if next <= s.next {
		return nil
	}
	s.stats.Gaps += next - s.next
	s.next = next
	s.seen = max(s.seen, next-1)
	s.out.skip(next)
	return s.drain()
}

// gapFrom handles a GAP the source sent over TCP. The source names as
// next a record it holds, or the one after the last it has: a GAP whose
// next lies past the one after everything it announced (GEOMETRY's first
// sequence, records, heartbeats: seen) is held, not applied, until a
// record or heartbeat announces next−1. A real source sends that record
// right after (a TCP stream the ring lapped: GAP to the oldest record,
// then that record), or a heartbeat within 200 ms; pendingGapDue refuses a
// GAP that stays unannounced: a bare GAP to 2^64−2 never moves the mirror.
func (s *sequencer) gapFrom(next uint64) error {
	if next <= s.next {
		return nil
	}
	if next-1 <= s.seen {
		return s.gap(next)
	}
	if next > s.pendingGap {
		s.pendingGap = next
	}
	return nil
}

// pendingGapDue applies the pending GAP, if any, once what the source
// announced reaches the record before its next (the records that came
// meanwhile were held, and are applied now); it is a protocol error when
// the GAP stayed unbacked for longer than wait, counted from the first
// call that saw it. The mirror calls it once per step, so that the hot
// path (data) pays nothing for it.
func (s *sequencer) pendingGapDue(now time.Time, wait time.Duration) error {
	if s.pendingGap == 0 {
		return nil
	}
	if backed, err := s.confirmGap(); backed || err != nil {
		return err
	}
	if s.pendingSince.IsZero() {
		s.pendingSince = now
	}
	if now.Sub(s.pendingSince) <= wait {
		return nil
	}
	return fmt.Errorf("%w: GAP to %d, past the last sequence the source announced (%d), backed by no record or heartbeat within %v",
		wire.ErrMalformed, s.pendingGap, s.seen, wait)
}

// confirmGap applies the pending GAP if what the source announced backs
// it, and reports whether it did.
func (s *sequencer) confirmGap() (bool, error) {
	if s.pendingGap == 0 || s.seen < s.pendingGap-1 {
		return false, nil
	}
	next := s.pendingGap
	s.pendingGap, s.pendingSince = 0, time.Time{}
	return true, s.gap(next)
}

// heartbeat notes the source's last sent sequence.
func (s *sequencer) heartbeat(last uint64) {
	s.hb = max(s.hb, last)
	s.seen = max(s.seen, last)
}

// wantNak reports the range to NAK now, if any: the first hole, from next
// up to the first held frame or the last sequence a heartbeat announced,
// at most MaxNakRecords records; one NAK outstanding, repeated after
// NakRepeat while the hole stays.
func (s *sequencer) wantNak(now time.Time) (first, last uint64, ok bool) {
	var end uint64 // last missing sequence
	held := len(s.held) > 0
	if held {
		end = s.held[0].h.Seq - 1
	} else if s.hb >= s.next {
		end = s.hb
	}
	if end < s.next || s.suppressNaks {
		s.hbHole, s.hole = time.Time{}, time.Time{}
		return 0, 0, false
	}
	if s.window > 0 && s.inWindow(now) {
		return 0, 0, false
	}
	if held {
		s.hbHole = time.Time{}
	} else {
		// Only a heartbeat (a TCP one may overtake the datagrams) says
		// these are missing: their datagrams may still be queued here.
		// NAK once the receive queue was drained and the transport
		// holds nothing back, or the hole has lasted NakRepeat without
		// moving (records still arriving move it).
		if s.hbHole.IsZero() || s.hbHoleFrom != s.next {
			s.hbHole, s.hbHoleFrom = now, s.next
		}
		if now.Sub(s.hbHole) < NakRepeat && (s.queued || s.withholder != nil && s.withholder.Withheld()) {
			return 0, 0, false
		}
	}
	if s.nakOut && now.Sub(s.nakAt) < NakRepeat {
		return 0, 0, false
	}
	first, last = s.next, min(end, s.next+s.nakRecordLimit-1)
	s.nakOut, s.nakLast, s.nakAt = true, last, now
	s.stats.NaksSent++
	return first, last, true
}

// inWindow reports whether the current hole is younger than the
// arbitration window (lines.go): the other line may still fill it.
func (s *sequencer) inWindow(now time.Time) bool {
	if s.hole.IsZero() || s.holeFrom != s.next {
		s.hole, s.holeFrom = now, s.next
	}
	return now.Sub(s.hole) < s.window
}

// windowLeft is how long the current hole's arbitration window has
// left (0: it ended, its NAK is due), for the loop's sleep; a long time
// when no window runs (none, no hole, or its NAK is out).
func (s *sequencer) windowLeft(now time.Time) time.Duration {
	if s.window <= 0 || s.hole.IsZero() || s.holeFrom != s.next || s.nakOut {
		return time.Hour
	}
	return max(s.hole.Add(s.window).Sub(now), 0)
}

// lag is how far the mirror is behind the newest sequence it has heard of.
func (s *sequencer) lag() uint64 {
	if s.seen < s.next {
		return 0
	}
	return s.seen - s.next + 1
}
