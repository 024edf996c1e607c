package replica

import (
	"errors"
	"math"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// Arbitration of two lines on a mirror (lines.go).
const (
	// DefaultLineWindow is MirrorConfig.LineWindow's default: how long a
	// hole may wait for the other line before it is NAKed. Two healthy
	// lines deliver a frame within tens of microseconds of each other
	// (LineStats.LateBy, docs/guide/replication.md): 1 ms covers a line
	// slower by a switch's queue, and costs a hole both lost 1 ms more.
	DefaultLineWindow = time.Millisecond
	// LineDark: a line that has owed for this long a copy the other line
	// delivered first (a frame, a heartbeat) has gone dark
	// (MirrorLineDown); its next datagram brings it back (MirrorLineUp).
	// Under traffic that is LineDark after its loss; an idle source
	// heartbeats every 128 ms on both lines, so then LineDark after the
	// other line's next heartbeat, told at the loop's next wake-up (at
	// least every 100 ms with telemetry).
	LineDark = 50 * time.Millisecond
	// lineTable is how many recent DATA frames the arbitration remembers
	// (by first sequence), to tell a first copy from a late one.
	lineTable = 1 << 14
)

// arbEntry is what the arbitration knows of one recent frame.
type arbEntry struct {
	seq   uint64
	at    int64 // when its first copy came, ns since lineRecv.epoch
	lines uint8 // bit i: line i delivered it
}

// lineRecv is a mirror's datagram transport over two lines: RecvBatch
// returns what either line has (alternating which goes first) and counts
// per line what came first and what came late (LineStats); the mirror's
// sequencer applies the first copy of each frame and counts the other as
// a duplicate. It runs on the mirror's loop only.
type lineRecv struct {
	t    [2]Transport
	srcA netip.AddrPort // where the mirror expects its source's datagrams from
	srcB netip.Addr     // where line B's come from (invalid: not announced)
	st   *[2]LineStats
	// event reports a line going dark or coming back (Mirror.emit).
	event func(line int, up bool)

	epoch time.Time
	tab   []arbEntry
	// fifo holds the first copies in arrival order (seq, at), from head;
	// one older than LineDark, or pushed out, is checked for the other
	// line's copy (LineStats.Lost).
	fifo       []arbEntry
	head, size int
	turn       int
	// hbs counts each line's heartbeats (which copy of one came first).
	hbs [2]uint64
	// pend[i] (0: none): when the other line delivered a first copy
	// (of a frame or a heartbeat) that line i still owes, since line i
	// last delivered anything; dark[i]: line i went dark.
	pend [2]int64
	dark [2]bool
}

// lineRecvPoll is a lineRecv whose lines are both Pollable.
type lineRecvPoll struct{ *lineRecv }

func newLineRecv(a, b Transport, srcA netip.AddrPort, srcB netip.Addr, st *[2]LineStats, event func(int, bool)) Transport {
	l := &lineRecv{t: [2]Transport{a, b}, srcA: srcA, srcB: srcB, st: st, event: event,
		epoch: time.Now(), tab: make([]arbEntry, lineTable), fifo: make([]arbEntry, lineTable)}
	for i := range l.t {
		st[i].Name, st[i].Up = TransportName(l.t[i]), true
	}
	_, pa := a.(Pollable)
	_, pb := b.(Pollable)
	if pa && pb {
		return lineRecvPoll{l}
	}
	return l
}

// PollFDs are both lines'.
func (l lineRecvPoll) PollFDs() []int {
	return append(append([]int(nil), l.t[0].(Pollable).PollFDs()...), l.t[1].(Pollable).PollFDs()...)
}

// OnArrival is given to both lines.
func (l lineRecvPoll) OnArrival(notify func()) {
	l.t[0].(Pollable).OnArrival(notify)
	l.t[1].(Pollable).OnArrival(notify)
}

// RecvBatch polls both lines, the first of them in turn; if neither has
// anything and wait is not 0, it waits on one line, at most 1 ms (so that
// the other is polled again soon: it may return 0 before wait), then polls
// the other. A line whose receive fails is counted (LineStats.Errors) and
// left for this call; only when both fail is the error returned.
func (l *lineRecv) RecvBatch(ms []Message, wait time.Duration) (int, error) {
	first := l.turn
	l.turn ^= 1
	n, errs := l.recv(first, ms, 0, 0, 0)
	n, errs = l.recv(first^1, ms, n, errs, 0)
	if n == 0 && wait != 0 && errs == 0 {
		w := time.Millisecond
		if wait > 0 {
			w = min(w, wait)
		}
		n, errs = l.recv(first, ms, 0, 0, w)
		n, errs = l.recv(first^1, ms, n, errs, 0)
	}
	if n == 0 && errs == 2 {
		return 0, ErrClosed
	}
	// Also when nothing came: the loop wakes at least every 100 ms (its
	// STATUS), and a line dark on an idle source is told then.
	l.check(time.Since(l.epoch).Nanoseconds())
	return n, nil
}

// recv receives from line i (waiting up to wait) into ms[n:] and returns the new count, and errs
// plus one if the line failed.
func (l *lineRecv) recv(i int, ms []Message, n, errs int, wait time.Duration) (int, int) {
	if n >= len(ms) {
		return n, errs
	}
	k, err := l.t[i].RecvBatch(ms[n:], wait)
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			l.st[i].Errors++
		}
		return n, errs + 1
	}
	return n + l.note(i, ms[n:n+k]), errs
}

// note counts the datagrams line i delivered and arbitrates their frames.
func (l *lineRecv) note(i int, ms []Message) int {
	if len(ms) == 0 {
		return 0
	}
	now := time.Since(l.epoch).Nanoseconds()
	st := &l.st[i]
	st.Received += uint64(len(ms))
	if l.dark[i] {
		l.dark[i], st.Up = false, true
		st.Ups++
		l.event(i, true)
	}
	l.pend[i] = 0
	for k := range ms {
		if i == 1 && (!l.srcB.IsValid() || ms[k].Addr.Addr().Unmap() == l.srcB) {
			ms[k].Addr = l.srcA // the source's, on its other network
		}
		h, err := wire.ParseHeader(ms[k].Buf[:ms[k].N], ms[k].N)
		first := false
		switch {
		case err != nil:
		case h.Kind == wire.KindData:
			first = l.arbitrate(i, h.Seq, now)
		case h.Kind == wire.KindHeartbeat:
			// An idle source's heartbeats repeat one sequence: the
			// line whose count is ahead brought the first copy.
			l.hbs[i]++
			first = l.hbs[i] > l.hbs[i^1]
		}
		if first && l.pend[i^1] == 0 {
			l.pend[i^1] = now // the other line owes its copy from now
		}
	}
	return len(ms)
}

// arbitrate counts the frame starting at seq that line i delivered, and
// reports whether this was its first copy.
func (l *lineRecv) arbitrate(i int, seq uint64, now int64) bool {
	e := &l.tab[seq&(lineTable-1)]
	bit := uint8(1) << i
	switch {
	case e.seq == seq && e.lines != 0:
		if e.lines&bit == 0 { // a line's own --dup copies count once
			e.lines |= bit
			l.st[i].late(time.Duration(now - e.at))
		}
		return false
	case e.seq > seq:
		l.st[i].late(time.Duration(math.MaxInt64)) // older than the table reaches
		return false
	}
	l.lost(e)
	*e = arbEntry{seq: seq, at: now, lines: bit}
	l.st[i].First++
	if l.size == len(l.fifo) {
		l.pop()
	}
	l.fifo[(l.head+l.size)%len(l.fifo)] = arbEntry{seq: seq, at: now}
	l.size++
	return true
}

// lost counts a frame only one line delivered as lost by the other.
func (l *lineRecv) lost(e *arbEntry) {
	if e.lines == 1 || e.lines == 2 {
		l.st[e.lines&1].Lost++ // only line e.lines-1 had it: the other lost it
	}
	e.lines = 0
}

// pop checks the oldest first copy still waited for.
func (l *lineRecv) pop() {
	f := l.fifo[l.head]
	l.head = (l.head + 1) % len(l.fifo)
	l.size--
	if e := &l.tab[f.seq&(lineTable-1)]; e.seq == f.seq {
		l.lost(e)
	}
}

// check counts as lost the copies that did not come within LineDark, and
// marks dark a line the other has delivered without it for LineDark.
func (l *lineRecv) check(now int64) {
	for l.size > 0 && now-l.fifo[l.head].at > LineDark.Nanoseconds() {
		l.pop()
	}
	for i := range l.pend {
		if !l.dark[i] && l.pend[i] != 0 && now-l.pend[i] > LineDark.Nanoseconds() {
			l.dark[i], l.st[i].Up = true, false
			l.st[i].Downs++
			l.event(i, false)
		}
	}
}

// SendBatch sends on line A (a unicast mirror's PUNCH; line B's goes by
// punchLineB).
func (l *lineRecv) SendBatch(ms []Message) (int, error) { return l.t[0].SendBatch(ms) }

// LocalAddr is line A's.
func (l *lineRecv) LocalAddr() netip.AddrPort { return l.t[0].LocalAddr() }

// Name names both lines' transports, "A+B".
func (l *lineRecv) Name() string { return l.st[0].Name + "+" + l.st[1].Name }

// Close closes both lines.
func (l *lineRecv) Close() error { return errors.Join(l.t[0].Close(), l.t[1].Close()) }
