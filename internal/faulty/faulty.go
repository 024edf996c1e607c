package faulty

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// Faults says what to do with received datagrams. Every field is optional.
type Faults struct {
	// Drop returns true for datagrams to lose. seq is the frame's sequence
	// (first record of a DATA frame), kind its kind, n counts datagrams
	// received so far (from 1).
	Drop func(kind wire.Kind, seq uint64, n uint64) bool
	// Hold, when it returns true, holds a datagram back and delivers it
	// after the next Delay datagrams (reordering).
	Hold  func(kind wire.Kind, seq uint64, n uint64) bool
	Delay int
	// Dup returns true for datagrams to deliver twice.
	Dup func(kind wire.Kind, seq uint64, n uint64) bool
}

// Stats counts what the wrapper did.
type Stats struct {
	Received, Dropped, Held, Duplicated uint64
}

// Transport applies Faults to an inner transport's received datagrams.
type Transport struct {
	replica.Transport
	f Faults

	mu     sync.Mutex
	n      uint64
	queue  [][]byte // delivered before new datagrams
	held   []heldDgram
	stats  Stats
	inner  []replica.Message
	inbufs [][]byte
}

type heldDgram struct {
	b     []byte
	from  netip.AddrPort
	after uint64 // deliver once n reaches this
}

// Wrap wraps t.
func Wrap(t replica.Transport, f Faults) *Transport {
	return &Transport{Transport: t, f: f}
}

// Name is the wrapped transport's name.
func (t *Transport) Name() string { return replica.TransportName(t.Transport) }

// Stats returns the counters.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// RecvBatch receives from the inner transport and applies the faults.
func (t *Transport) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.inner) < len(ms) {
		t.inner = make([]replica.Message, len(ms))
		t.inbufs = make([][]byte, len(ms))
		for i := range t.inbufs {
			t.inbufs[i] = make([]byte, wire.MaxMTU)
		}
	}
	out := t.flush(ms, 0)
	if out > 0 {
		wait = 0
	}
	in := t.inner[:len(ms)-out]
	for i := range in {
		in[i].Buf = t.inbufs[i]
	}
	k, err := t.Transport.RecvBatch(in, wait)
	for i := 0; i < k; i++ {
		out = t.deliver(ms, out, in[i].Buf[:in[i].N], in[i].Addr)
	}
	return out, err
}

// deliver applies the faults to one datagram, copying what is delivered
// into ms[out:] (or the overflow queue).
func (t *Transport) deliver(ms []replica.Message, out int, b []byte, from netip.AddrPort) int {
	t.n++
	t.stats.Received++
	kind, seq := wire.Kind(0), uint64(0)
	if len(b) >= wire.HeaderSize {
		kind, seq = wire.Kind(b[0]), binary.LittleEndian.Uint64(b[8:])
	}
	switch {
	case t.f.Drop != nil && t.f.Drop(kind, seq, t.n):
		t.stats.Dropped++
		return out
	case t.f.Hold != nil && t.f.Hold(kind, seq, t.n):
		t.stats.Held++
		t.held = append(t.held, heldDgram{b: append([]byte(nil), b...), from: from, after: t.n + uint64(max(t.f.Delay, 1))})
		return out
	}
	copies := 1
	if t.f.Dup != nil && t.f.Dup(kind, seq, t.n) {
		copies = 2
		t.stats.Duplicated++
	}
	for range copies {
		out = t.put(ms, out, b, from)
	}
	// release held datagrams whose delay has passed
	for i := 0; i < len(t.held); {
		if t.n >= t.held[i].after {
			h := t.held[i]
			t.held = append(t.held[:i], t.held[i+1:]...)
			out = t.put(ms, out, h.b, h.from)
			continue
		}
		i++
	}
	return out
}

func (t *Transport) put(ms []replica.Message, out int, b []byte, from netip.AddrPort) int {
	if out < len(ms) {
		ms[out].N = copy(ms[out].Buf[:cap(ms[out].Buf)], b)
		ms[out].Addr = from
		return out + 1
	}
	t.queue = append(t.queue, append([]byte(nil), b...))
	return out
}

// flush delivers queued datagrams first.
func (t *Transport) flush(ms []replica.Message, out int) int {
	for len(t.queue) > 0 && out < len(ms) {
		ms[out].N = copy(ms[out].Buf[:cap(ms[out].Buf)], t.queue[0])
		t.queue = t.queue[1:]
		out++
	}
	return out
}

// Pollable is a Transport over a replica.Pollable transport, Pollable
// itself: a loop that waits on the inner transport's descriptors then
// receives through the faults. Nothing stays queued in the wrapper when
// a receive returns nothing (held datagrams wait for later arrivals by
// design), so a loop that sleeps after an empty receive misses nothing.
type Pollable struct {
	*Transport
	p replica.Pollable
}

// WrapPollable wraps t, which must be a replica.Pollable.
func WrapPollable(t replica.Transport, f Faults) *Pollable {
	return &Pollable{Transport: Wrap(t, f), p: t.(replica.Pollable)}
}

// PollFDs are the inner transport's.
func (t *Pollable) PollFDs() []int { return t.p.PollFDs() }

// OnArrival is the inner transport's.
func (t *Pollable) OnArrival(notify func()) { t.p.OnArrival(notify) }

// Pending reports whether a receive may return something: datagrams
// queued in the wrapper, or the inner transport's answer (true when it is
// not a replica.Peeker).
func (t *Pollable) Pending(now time.Time) bool {
	return t.peek(func(p replica.Peeker) bool { return p.Pending(now) })
}

// Arrived is Pending without the inner transport's due busy poll.
func (t *Pollable) Arrived() bool { return t.peek(replica.Peeker.Arrived) }

// peek is true when datagrams are queued in the wrapper, else the inner
// transport's answer to ask (true when it is not a replica.Peeker).
func (t *Pollable) peek(ask func(replica.Peeker) bool) bool {
	t.mu.Lock()
	queued := len(t.queue) > 0
	t.mu.Unlock()
	if p, ok := t.Transport.Transport.(replica.Peeker); ok && !queued {
		return ask(p)
	}
	return true
}
