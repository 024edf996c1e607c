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

// FillQueue gives the kernel frames to receive into.
type FillQueue struct {
	ring
	addrs []uint64
}

// Reserve claims up to n entries; it returns how many and the first index.
func (q *FillQueue) Reserve(n uint32) (nReserved, index uint32) { return q.reserve(n) }

// Set writes the frame address of reserved entry index.
func (q *FillQueue) Set(index uint32, addr uint64) { q.addrs[index&q.mask] = addr }

// Notify publishes the reserved entries.
func (q *FillQueue) Notify() { q.notify() }

// NeedWakeup reports whether the kernel asks for a syscall to process it.
func (q *FillQueue) NeedWakeup() bool { return q.needWakeup() }

// CompletionQueue returns the frames the kernel has sent.
type CompletionQueue struct {
	ring
	addrs []uint64
}

// Peek returns the number of completed frames and the first index.
func (q *CompletionQueue) Peek() (n, index uint32) { return q.peek() }

// Get returns the frame address of entry index.
func (q *CompletionQueue) Get(index uint32) uint64 { return q.addrs[index&q.mask] }

// Release hands n entries back.
func (q *CompletionQueue) Release(n uint32) { q.release(n) }

// Desc is a frame in the UMEM (struct xdp_desc).
type Desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// RXQueue holds the frames the kernel received.
type RXQueue struct {
	ring
	descs []Desc
}

// Peek returns the number of received frames and the first index.
func (q *RXQueue) Peek() (n, index uint32) { return q.peek() }

// Get returns the descriptor of entry index.
func (q *RXQueue) Get(index uint32) Desc { return q.descs[index&q.mask] }

// Release hands n entries back.
func (q *RXQueue) Release(n uint32) { q.release(n) }

// TXQueue holds the frames to send.
type TXQueue struct {
	ring
	descs []Desc
}

// Reserve claims up to n entries; it returns how many and the first index.
func (q *TXQueue) Reserve(n uint32) (nReserved, index uint32) { return q.reserve(n) }

// Set writes the descriptor of reserved entry index.
func (q *TXQueue) Set(index uint32, d Desc) { q.descs[index&q.mask] = d }

// Notify publishes the reserved entries.
func (q *TXQueue) Notify() { q.notify() }

// NeedWakeup reports whether the kernel asks for a sendto to send them.
func (q *TXQueue) NeedWakeup() bool { return q.needWakeup() }
