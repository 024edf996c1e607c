package shm

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// MuxPolicy says which source a RingMultiplexer serves first.
type MuxPolicy uint8

const (
	// RoundRobin serves the sources in turn: after a record from source
	// i, the next receive looks at i+1 first. Under equal load each gets
	// an equal share.
	RoundRobin MuxPolicy = iota
	// Priority always looks at source 0 first, then 1, ...: a source is
	// served only while every source added before it has nothing.
	Priority
)

// MuxSource is a consumer a RingMultiplexer can receive from:
// *Consumer[T] (broadcast) and *MpmcQueueConsumer[T] (competing).
type MuxSource[T any] interface {
	muxTry(v *T) (uint64, bool)
	muxRing() *Ring
	muxReady() bool
	muxWaiter() *waiter
}

// Origin says where a multiplexed record came from.
type Origin struct {
	Index int    // the source, in the order of Add (0 first)
	Seq   uint64 // the record's sequence in that source's ring
}

// RingMultiplexer receives from several consumers of possibly different
// rings with one call. Its blocking receives sleep on every ring's futex
// word at once (futex_waitv), so a record in any ring wakes them. The
// multiplexer does not own its sources: close them yourself. Use it from
// one goroutine at a time, and do not receive from its sources directly
// meanwhile.
type RingMultiplexer[T any] struct {
	srcs   []MuxSource[T]
	rings  []*Ring
	policy MuxPolicy
	next   int
	w      *waiter
}

// NewRingMultiplexer returns an empty multiplexer; ws is the strategy of
// its blocking receives (nil: SpinYield(128)).
func NewRingMultiplexer[T any](policy MuxPolicy, ws *WaitStrategy) *RingMultiplexer[T] {
	m := &RingMultiplexer[T]{policy: policy, w: &waiter{ws: SpinYield(128)}}
	if ws != nil {
		m.w.ws = *ws
	}
	return m
}

// Add appends a source and returns its index; at most 64 sources.
func (m *RingMultiplexer[T]) Add(src MuxSource[T]) (int, error) {
	if len(m.srcs) == maxWaitRings {
		return 0, fmt.Errorf("%w: a multiplexer takes at most %d sources", ErrInvalid, maxWaitRings)
	}
	m.srcs = append(m.srcs, src)
	m.rings = append(m.rings, src.muxRing())
	return len(m.srcs) - 1, nil
}

// Close forgets the sources (it does not close them) and the context the
// last blocking receive watched.
func (m *RingMultiplexer[T]) Close() error {
	m.w.release()
	m.srcs, m.rings = nil, nil
	return nil
}

// Len is the number of sources.
func (m *RingMultiplexer[T]) Len() int { return len(m.srcs) }

// TryRecv copies the next record of the first source (in policy order)
// that has one into v; ok false when none has.
func (m *RingMultiplexer[T]) TryRecv(v *T) (Origin, bool) {
	n := len(m.srcs)
	inFlight := false
	start := 0
	if m.policy == RoundRobin && n > 0 {
		start = m.next % n
	}
	for k := range n {
		i := start + k
		if i >= n {
			i -= n
		}
		if m.rings[i].closed {
			continue
		}
		if seq, ok := m.srcs[i].muxTry(v); ok {
			m.next = i + 1
			return Origin{Index: i, Seq: seq}, true
		}
		inFlight = inFlight || m.srcs[i].muxWaiter().inFlight
	}
	m.w.inFlight = inFlight
	return Origin{}, false
}

// Recv waits for a record from any source until ctx is done (ctx's error
// then, promptly). It returns ErrClosed once every source is closed.
func (m *RingMultiplexer[T]) Recv(ctx context.Context, v *T) (Origin, error) {
	return m.recvUntil(ctx, ctxDeadline(ctx), v)
}

// RecvTimeout waits for a record at most timeout (0: forever).
func (m *RingMultiplexer[T]) RecvTimeout(v *T, timeout time.Duration) (Origin, error) {
	return m.recvUntil(nil, deadlineAfter(timeout), v)
}

func (m *RingMultiplexer[T]) recvUntil(ctx context.Context, deadline time.Time, v *T) (Origin, error) {
	return recvLoop(m.w, ctx, deadline, m.rings, m.allClosed, func() (Origin, bool, error) {
		o, ok := m.TryRecv(v)
		return o, ok, nil
	}, m.ready)
}

func (m *RingMultiplexer[T]) allClosed() bool {
	for _, r := range m.rings {
		if !r.closed {
			return false
		}
	}
	return true
}

func (m *RingMultiplexer[T]) ready() bool {
	for i, s := range m.srcs {
		if !m.rings[i].closed && s.muxReady() {
			return true
		}
	}
	return false
}

// All iterates over the records of every source, in policy order, until
// ctx ends or every source is closed.
func (m *RingMultiplexer[T]) All(ctx context.Context) iter.Seq2[Origin, T] {
	return func(yield func(Origin, T) bool) {
		var v T
		for {
			o, err := m.Recv(ctx, &v)
			if err != nil || !yield(o, v) {
				return
			}
		}
	}
}

func (c *Consumer[T]) muxTry(v *T) (uint64, bool) { return c.rd.TryRecv(bytesOf(v)) }
func (c *Consumer[T]) muxRing() *Ring             { return c.rd.r }
func (c *Consumer[T]) muxReady() bool             { return c.rd.ready() }
func (c *Consumer[T]) muxWaiter() *waiter         { return c.rd.w }

func (c *MpmcQueueConsumer[T]) muxTry(v *T) (uint64, bool) { return c.q.TryRecv(bytesOf(v)) }
func (c *MpmcQueueConsumer[T]) muxRing() *Ring             { return c.q.r }
func (c *MpmcQueueConsumer[T]) muxReady() bool             { return c.q.ready() }
func (c *MpmcQueueConsumer[T]) muxWaiter() *waiter         { return c.q.w }

// All iterates over the consumer's records, with their sequences, until
// ctx ends or the consumer is closed.
func (c *Consumer[T]) All(ctx context.Context) iter.Seq2[uint64, T] {
	return records[T](ctx, c.rd.RecvContext)
}

// All iterates over the records this consumer wins, with their sequences,
// until ctx ends or the consumer is closed.
func (c *MpmcQueueConsumer[T]) All(ctx context.Context) iter.Seq2[uint64, T] {
	return records[T](ctx, c.q.RecvContext)
}

// records is the iterator of a consumer whose blocking receive is recv.
func records[T any](ctx context.Context, recv func(context.Context, []byte) (uint64, error)) iter.Seq2[uint64, T] {
	return func(yield func(uint64, T) bool) {
		var v T
		for {
			seq, err := recv(ctx, bytesOf(&v))
			if err != nil || !yield(seq, v) {
				return
			}
		}
	}
}
