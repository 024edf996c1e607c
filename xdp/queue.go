package xdp

import "sync/atomic"

// ring is one mapped AF_XDP ring. Exactly one side, the kernel or us,
// produces; the other consumes.
type ring struct {
	mem []byte // the mapping (for munmap)
	// producer: written by the producing side with an atomic store after
	// it wrote the entries it publishes; loaded atomically by the consumer.
	producer *atomic.Uint32
	// consumer: written by the consuming side with an atomic store after
	// it finished reading the entries it releases; loaded atomically by
	// the producer before reusing them.
	consumer *atomic.Uint32
	// flags: written by the kernel (XDP_RING_NEED_WAKEUP), read atomically.
	flags *atomic.Uint32
	mask  uint32
	size  uint32

	local  uint32 // our index: producer of fill/TX, consumer of RX/completion
	cached uint32 // last value seen of the other side's index
}

// reserve claims up to n entries to produce and returns how many and the
// index of the first.
func (r *ring) reserve(n uint32) (uint32, uint32) {
	free := r.size - (r.local - r.cached)
	if free < n {
		r.cached = r.consumer.Load()
		free = r.size - (r.local - r.cached)
	}
	n = min(n, free)
	idx := r.local
	r.local += n
	return n, idx
}

// notify publishes every reserved entry to the kernel.
func (r *ring) notify() { r.producer.Store(r.local) }

// peek returns how many entries are ready to consume and the index of the
// first.
func (r *ring) peek() (uint32, uint32) {
	n := r.cached - r.local
	if n == 0 {
		r.cached = r.producer.Load()
		n = r.cached - r.local
	}
	return n, r.local
}

// release hands n consumed entries back to the kernel.
func (r *ring) release(n uint32) {
	r.local += n
	r.consumer.Store(r.local)
}

func (r *ring) needWakeup() bool { return r.flags.Load()&needWakeup != 0 }

// producer is a ring we produce into: reserve entries, set them, notify.
type producer[T any] struct {
	ring
	entries []T
}

// Reserve claims up to n entries; it returns how many and the first index.
func (q *producer[T]) Reserve(n uint32) (nReserved, index uint32) { return q.reserve(n) }

// Set writes reserved entry index.
func (q *producer[T]) Set(index uint32, v T) { q.entries[index&q.mask] = v }

// Notify publishes the reserved entries.
func (q *producer[T]) Notify() { q.notify() }

// NeedWakeup reports whether the kernel asks for a syscall to process them.
func (q *producer[T]) NeedWakeup() bool { return q.needWakeup() }

// consumer is a ring the kernel produces into: peek, get, release.
type consumer[T any] struct {
	ring
	entries []T
}

// Peek returns the number of entries ready and the first index.
func (q *consumer[T]) Peek() (n, index uint32) { return q.peek() }

// Get returns entry index.
func (q *consumer[T]) Get(index uint32) T { return q.entries[index&q.mask] }

// Release hands n entries back to the kernel.
func (q *consumer[T]) Release(n uint32) { q.release(n) }

// FillQueue gives the kernel frames (UMEM addresses) to receive into.
type FillQueue struct{ producer[uint64] }

// CompletionQueue returns the frames the kernel has sent.
type CompletionQueue struct{ consumer[uint64] }

// Desc is a frame in the UMEM (struct xdp_desc).
type Desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// RXQueue holds the frames the kernel received.
type RXQueue struct{ consumer[Desc] }

// TXQueue holds the frames to send.
type TXQueue struct{ producer[Desc] }
