package shm

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Ring is a live mapping of a ring file: the validated layout and the shared
// words of its header. Writer, Reader and the typed producers and consumers
// are built on it; replica code uses its raw slot API directly.
//
// A Ring is not safe for concurrent Close with other calls.
type Ring struct {
	path   string
	f      *os.File
	m      *mapping
	layout Layout
	closed bool

	// Shared header words, pointers into the mapping (validated at open).
	//
	// writeSeq (@32): the last published sequence. Written by the producer
	// only, with an atomic Store after the slot(s) it publishes (release);
	// readers Load it (acquire) to learn how far they may read.
	writeSeq *atomic.Uint64
	// futex (@52): bumped by the producer with an atomic Add when
	// waiting > 0, then FUTEX_WAKE; sleeping readers FUTEX_WAIT on it.
	futex *atomic.Uint32
	// waiting (@56): readers about to sleep. Readers Add(1) before their
	// last check of writeSeq and Add(-1) after waking; the producer Loads it
	// after storing writeSeq (both sequentially consistent: Dekker-style,
	// one of the two always sees the other).
	waiting *atomic.Uint32
	// reserved (arena header @16): cumulative arena bytes reserved. Written
	// by the producer with an atomic Swap before it overwrites arena bytes;
	// readers Load it after copying a blob to detect an overwrite.
	reserved *atomic.Uint64
	// claimSeq (@40), multi-producer rings only: the next ticket. Each
	// producer takes one with an atomic Add (fetch-and-add); it publishes
	// nothing by itself (a claimed ticket may still be unwritten). Queue
	// consumers Load it to learn which tickets exist.
	claimSeq *atomic.Uint64
	// readSeq (@64), multi-producer rings only: the next ticket a queue
	// consumer will take. Queue consumers move it with CompareAndSwap (one
	// ticket, or a jump past tickets overwritten a lap ago); the winner of
	// the CAS owns the ticket(s).
	readSeq *atomic.Uint64
	// multi is set for FlagMPMC rings: write_seq is then the highest
	// completed ticket (an atomic max), not a contiguous prefix.
	multi bool
	// hdr is a writable mapping holding the header's futex words: m itself
	// when m is writable, a separate one-page mapping when the ring was
	// opened read-only with Notify, nil when waits cannot sleep on the futex.
	hdr *mapping
}

// OpenOptions control how Open maps a ring.
type OpenOptions struct {
	// Writable maps the ring read-write. Readers that register in the
	// reader registry need it; stat, dump and serve do not.
	Writable bool
	// Notify maps the header's first page writable, even when the rest of
	// the ring is read-only, so that waits can announce themselves in
	// waiting_consumers and sleep on the futex word. Without write access to
	// the file, waits fall back to short sleeps.
	Notify bool
}

// Open attaches to an existing ring, validating every header field and
// region against the file size.
func Open(path string, opts OpenOptions) (*Ring, error) {
	f, m, err := openMapped(path, opts.Writable, HeaderSize)
	if err != nil {
		return nil, fmt.Errorf("open ring %s: %w", path, err)
	}
	r, err := newRing(path, f, m)
	if err != nil {
		m.unmap()
		f.Close()
		return nil, fmt.Errorf("open ring %s: %w", path, err)
	}
	if opts.Notify && !opts.Writable {
		r.mapNotify()
	}
	return r, nil
}

// mapNotify maps the header page writable through a second descriptor, for
// futex waits on a ring otherwise mapped read-only. Failure (a file we may
// not write) leaves hdr nil: waits then poll.
func (r *Ring) mapNotify() {
	f, err := openRegular(r.path, os.O_RDWR)
	if err != nil {
		return
	}
	defer f.Close() // the mapping outlives the descriptor
	// The path may name another inode if the ring was replaced meanwhile:
	// only map the very file the ring was opened from.
	if !os.SameFile(statOrNil(f), statOrNil(r.f)) {
		return
	}
	h, err := mapFile(f, HeaderSize, true, false)
	if err != nil {
		return
	}
	r.hdr = h
	r.futex = h.u32(offFutex)
	r.waiting = h.u32(offWaiting)
}

func newRing(path string, f *os.File, m *mapping) (*Ring, error) {
	// The magic is stored last by the creator: load it atomically first so
	// the rest of the header is complete when it reads right.
	if mg := m.u64(offMagic).Load(); mg != Magic {
		return nil, fieldErr(ErrMagic, "magic", mg, "want %#x (\"RINGFIRE\"); 0 means the creator has not finished", Magic)
	}
	var hdr [HeaderSize]byte
	m.loadWords(hdr[:], 0)
	h, err := ParseHeader(hdr[:], uint64(len(m.data)))
	if err != nil {
		return nil, err
	}
	r := &Ring{path: path, f: f, m: m, layout: h.Layout}
	r.writeSeq = m.u64(offWriteSeq)
	r.claimSeq = m.u64(offClaimSeq)
	r.readSeq = m.u64(offReadSeq)
	r.multi = h.Flags&FlagMPMC != 0
	r.futex = m.u32(offFutex)
	r.waiting = m.u32(offWaiting)
	if m.writable {
		r.hdr = m
	}
	if h.Flags&FlagArena != 0 {
		if c := m.u64(h.ArenaOffset + arenaCapacity).Load(); c != h.ArenaSize {
			return nil, fieldErr(ErrCorrupt, "arena capacity", c, "want arena_size %d", h.ArenaSize)
		}
		if mk := m.u64(h.ArenaOffset + arenaMask).Load(); mk != h.ArenaSize-1 {
			return nil, fieldErr(ErrCorrupt, "arena mask", mk, "want arena_size-1 = %d", h.ArenaSize-1)
		}
		r.reserved = m.u64(h.ArenaOffset + arenaReserved)
	}
	return r, nil
}

// Path is the file the ring was opened or created at.
func (r *Ring) Path() string { return r.path }

// Layout is the ring's validated geometry.
func (r *Ring) Layout() Layout { return r.layout }

// Header returns a snapshot of the header, live counters included.
func (r *Ring) Header() (Header, error) {
	if r.closed {
		return Header{}, ErrClosed
	}
	var hdr [HeaderSize]byte
	r.m.loadWords(hdr[:], 0)
	return ParseHeader(hdr[:], uint64(len(r.m.data)))
}

// WriteSeq is the last published sequence (0 before the first record).
func (r *Ring) WriteSeq() uint64 {
	if r.closed {
		return 0
	}
	return r.writeSeq.Load()
}

// Oldest is the oldest sequence the ring can still hold given write_seq w.
func (r *Ring) oldest(w uint64) uint64 {
	if w < r.layout.Capacity {
		return 1
	}
	return w - r.layout.Capacity + 1
}

// Oldest returns the oldest sequence the ring may still retain.
func (r *Ring) Oldest() uint64 { return r.oldest(r.WriteSeq()) }

// Close unmaps the ring. Later calls on it fail with ErrClosed.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.hdr != nil && r.hdr != r.m {
		r.hdr.unmap()
	}
	err := r.m.unmap()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *Ring) slotOff(seq uint64) uint64 {
	return r.layout.SlotsOffset + (seq&(r.layout.Capacity-1))*uint64(r.layout.ElementSize)
}

// slotSeq is a slot's sequence word: 0 empty, SlotWriting while a producer
// copies a payload in, N once it holds message N. The single producer
// writes it with markWriting before the copy and storeRelease(N) after it
// (storerel_amd64.go); a multi-producer producer takes it with a
// CompareAndSwap(previous lap → SlotWriting) and Stores N after the copy.
// Readers Load it before and after copying the payload.
func (r *Ring) slotSeq(seq uint64) *atomic.Uint64 { return r.m.u64(r.slotOff(seq)) }

func statOrNil(f *os.File) os.FileInfo {
	st, _ := f.Stat()
	return st
}

// Replaced reports whether the ring's path now names another file (a
// restarted producer created a new ring there) or nothing at all.
func (r *Ring) Replaced() bool {
	if r.closed {
		return false
	}
	st, err := os.Stat(r.path)
	if err != nil {
		return true
	}
	return !os.SameFile(st, statOrNil(r.f))
}

// Shrunk reports, as an error wrapping ErrTruncated that names the file,
// when the ring's file is now shorter than its mapping (cut by another
// process): an access to the lost part would fault. nil otherwise, or
// after Close.
func (r *Ring) Shrunk() error {
	if r.closed {
		return nil
	}
	st, err := r.f.Stat()
	if err != nil || st.Size() >= int64(len(r.m.data)) {
		return nil
	}
	return fmt.Errorf("%w: %s was cut to %d bytes under its %d-byte mapping", ErrTruncated, r.path, st.Size(), len(r.m.data))
}
