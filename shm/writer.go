package shm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// CreateOptions control Create.
type CreateOptions struct {
	// Replace allows creating over an existing ring of another geometry (or
	// over a file that is not a valid ring). Without it that is refused with
	// ErrGeometry. A stale ring of the same geometry is always replaced.
	Replace bool
	// MaxSize limits the size of the new file in bytes: 0 means
	// DefaultMaxSize, negative means no limit. Either way the file must fit
	// in the filesystem's free space; both are checked before anything is
	// created (ErrTooLarge, ErrNoSpace), and the space is then reserved.
	MaxSize int64
}

// Writer is the single producer of a ring, byte-oriented: Producer[T] and
// BlobProducer[M] wrap it, and replica mirrors use Store and Publish to write
// records at the source's sequence numbers. It holds an exclusive flock on
// the ring file for its lifetime.
type Writer struct {
	r        *Ring
	next     uint64 // next sequence Push will write
	lossless bool
	gate     uint64 // lossless: highest sequence writable without a rescan
	stats    WriterStats
}

// WriterStats counts a writer's activity.
type WriterStats struct {
	Published    uint64 // records written
	Backpressure uint64 // pushes that found the gate closed (waited or refused)
	Pruned       uint64 // dead readers released while waiting
}

// Create makes a new ring at path for cfg and returns its writer.
func Create(path string, cfg RingConfig, opts CreateOptions) (*Writer, error) {
	l, err := NewLayout(cfg)
	if err != nil {
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	return CreateLayout(path, l, opts)
}

// CreateLayout makes a new ring with exactly layout l (a mirror copies its
// source's layout this way).
func CreateLayout(path string, l Layout, opts CreateOptions) (*Writer, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	if l.Flags&FlagMPMC != 0 {
		return nil, fmt.Errorf("create ring %s: %w: a multi-producer ring has no single writer (use CreateMPMC)", path, ErrInvalid)
	}
	r, err := createRingFile(path, l, opts)
	if err != nil {
		return nil, err
	}
	return newWriter(r), nil
}

// createRingFile makes the ring file of layout l, locked exclusively, with its
// header published (magic last).
func createRingFile(path string, l Layout, opts CreateOptions) (*Ring, error) {
	inspect := func(f *os.File) error {
		if opts.Replace {
			return nil
		}
		old, err := readLayout(f)
		if err != nil {
			return fmt.Errorf("%w: %s is not a valid ring (%v); pass Replace to overwrite it", ErrGeometry, path, err)
		}
		if old != l {
			return fmt.Errorf("%w: %s has %+v, want %+v", ErrGeometry, path, old, l)
		}
		return nil
	}
	f, m, err := createLocked(path, int64(l.FileSize()), opts.MaxSize, inspect)
	if err != nil {
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	l.encode(m.data[:HeaderSize])
	if l.Flags&FlagArena != 0 {
		m.u64(l.ArenaOffset + arenaCapacity).Store(l.ArenaSize)
		m.u64(l.ArenaOffset + arenaMask).Store(l.ArenaSize - 1)
	}
	// Publish the header: the magic goes last (an atomic store orders every
	// header write before it).
	m.u64(offMagic).Store(Magic)
	r, err := newRing(path, f, m)
	if err != nil { // cannot happen for a validated layout
		m.unmap()
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	return r, nil
}

// OpenWriter takes over an existing ring no live producer holds and continues
// it at write_seq + 1 (a mirror resuming after a restart).
func OpenWriter(path string) (*Writer, error) {
	r, err := Open(path, OpenOptions{Writable: true})
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(r.f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		r.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("open writer %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("open writer %s: %w", path, os.NewSyscallError("flock", err))
	}
	if r.layout.Flags&FlagMPMC != 0 {
		r.Close()
		return nil, fmt.Errorf("open writer %s: %w: a multi-producer ring has no single writer (use OpenMultiWriter)", path, ErrInvalid)
	}
	return newWriter(r), nil
}

func newWriter(r *Ring) *Writer {
	w := &Writer{r: r, next: r.writeSeq.Load() + 1, lossless: r.layout.Flags&FlagLossless != 0}
	return w
}

func readLayout(f *os.File) (Layout, error) {
	st, err := f.Stat()
	if err != nil {
		return Layout{}, err
	}
	var hdr [HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return Layout{}, fieldErr(ErrTruncated, "file size", uint64(st.Size()), "shorter than the header")
	}
	h, err := ParseHeader(hdr[:], uint64(st.Size()))
	return h.Layout, err
}

// Ring is the ring this writer writes.
func (w *Writer) Ring() *Ring { return w.r }

// Next is the sequence the next Push will get.
func (w *Writer) Next() uint64 { return w.next }

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats { return w.stats }

// Push writes p as the next record and publishes it. On a lossless ring it
// waits (spin, yield, then short sleeps, pruning dead readers) while the
// slowest live registered reader is a full ring behind.
func (w *Writer) Push(p []byte) (uint64, error) { return w.PushContext(nil, p) }

// PushContext is Push whose wait for a lossless ring's readers ends with
// ctx's error when ctx is done (ctx may be nil: wait forever).
func (w *Writer) PushContext(ctx context.Context, p []byte) (uint64, error) {
	return w.push(ctx, p, true)
}

// TryPush is Push that returns ErrBackpressure instead of waiting.
func (w *Writer) TryPush(p []byte) (uint64, error) { return w.push(nil, p, false) }

func (w *Writer) push(ctx context.Context, p []byte, wait bool) (uint64, error) {
	if w.r.closed {
		return 0, ErrClosed
	}
	if len(p) > w.r.layout.PayloadSize() {
		return 0, w.errSize(p)
	}
	seq := w.next
	if err := w.admit(ctx, seq, wait); err != nil {
		return 0, err
	}
	w.store(seq, p)
	w.publish(seq)
	return seq, nil
}

// admit returns once record seq may be written: at once on a lossy ring or
// below the gate, else after the slowest live reader moved on (wait) or
// with ErrBackpressure (!wait).
func (w *Writer) admit(ctx context.Context, seq uint64, wait bool) error {
	if !w.lossless || seq <= w.gate || w.openGate(seq) {
		return nil
	}
	w.stats.Backpressure++
	if !wait {
		return ErrBackpressure
	}
	return w.waitGate(ctx, seq)
}

// PushBatch writes the records of p, size bytes each and back to back, and
// publishes them all with one write_seq store (and at most one wake-up),
// as the reference's push_batch. It returns the last sequence written. On
// a lossless ring it waits for readers as Push does, publishing what it
// stored before it waits (readers cannot move past unpublished records).
func (w *Writer) PushBatch(p []byte, size int) (uint64, error) {
	if w.r.closed {
		return 0, ErrClosed
	}
	if size <= 0 || size > w.r.layout.PayloadSize() || len(p)%size != 0 {
		return 0, fmt.Errorf("%w: batch of %d bytes in %d-byte records, slots hold %d", ErrInvalid, len(p), size, w.r.layout.PayloadSize())
	}
	first := w.next
	for off := 0; off < len(p); off += size {
		seq := w.next
		if w.lossless && seq > w.gate && !w.openGate(seq) {
			w.stats.Backpressure++
			if seq > first {
				w.publish(seq - 1)
			}
			if err := w.waitGate(nil, seq); err != nil {
				return seq - 1, err
			}
		}
		w.store(seq, p[off:off+size])
	}
	if w.next > first {
		w.publish(w.next - 1)
	}
	return w.next - 1, nil
}

// Store writes p as record seq without publishing it: seq must be at least
// Next (sequences may skip, leaving holes: use a SPARSE ring). It never
// waits for readers. Call Publish after a batch of Stores.
func (w *Writer) Store(seq uint64, p []byte) error {
	if w.r.closed {
		return ErrClosed
	}
	if seq < w.next || seq == SlotWriting {
		return fmt.Errorf("%w: store of sequence %d, next is %d", ErrInvalid, seq, w.next)
	}
	if len(p) > w.r.layout.PayloadSize() {
		return w.errSize(p)
	}
	w.store(seq, p)
	return nil
}

func (w *Writer) errSize(p []byte) error {
	return fmt.Errorf("%w: payload of %d bytes, slots hold %d", ErrInvalid, len(p), w.r.layout.PayloadSize())
}

// Publish makes every record up to seq visible (write_seq = seq) and wakes
// sleeping readers.
func (w *Writer) Publish(seq uint64) error {
	if w.r.closed {
		return ErrClosed
	}
	if seq >= w.next {
		return fmt.Errorf("%w: publish of %d, last stored is %d", ErrInvalid, seq, w.next-1)
	}
	w.publish(seq)
	return nil
}

// store is the seqlock write of one slot: mark it SlotWriting (ordered
// before the payload stores), copy the payload, then store the sequence
// (ordered after them); see storerel_amd64.go.
func (w *Writer) store(seq uint64, p []byte) {
	r := w.r
	off := r.slotOff(seq)
	word := r.m.word(off)
	markWriting(word)
	r.m.storeBytes(off+8, p)
	if n := r.layout.PayloadSize(); len(p) < n {
		clear(r.m.data[off+8+uint64(len(p)) : off+8+uint64(n)])
	}
	storeRelease(word, seq)
	w.next = seq + 1
	w.stats.Published++
}

func (w *Writer) publish(seq uint64) {
	r := w.r
	r.writeSeq.Store(seq)
	if r.waiting.Load() > 0 {
		r.futex.Add(1)
		r.m.futexWake(offFutex)
	}
}

// openGate rescans the registry for the slowest live reader and reports
// whether seq may be written. The gate is also capped half a ring ahead so
// that a newly registered reader is seen at least every half ring.
func (w *Writer) openGate(seq uint64) bool {
	capa := w.r.layout.Capacity
	half := max(capa/2, 1)
	limit := seq - min(seq, capa) + 1 // cursors below this block seq
	minc, ok, pruned := w.r.minCursor(limit)
	w.stats.Pruned += uint64(pruned)
	gate := seq - 1 + half
	if ok && minc+capa-1 < gate {
		gate = minc + capa - 1
	}
	w.gate = gate
	return seq <= gate
}

// waitGate blocks until seq may be written: spin, then yield, then sleeps
// growing to 1 ms, rescanning (and pruning dead readers) each round.
func (w *Writer) waitGate(ctx context.Context, seq uint64) error {
	sleep := 20 * time.Microsecond
	for i := 0; ; i++ {
		switch {
		case i < 64:
		case i < 128:
			runtime.Gosched()
		default:
			if ctx != nil && ctx.Err() != nil {
				return fmt.Errorf("push %d: %w", seq, ctx.Err())
			}
			time.Sleep(sleep)
			sleep = min(2*sleep, time.Millisecond)
		}
		if w.openGate(seq) {
			return nil
		}
	}
}

// Close releases the flock and unmaps the ring.
func (w *Writer) Close() error { return w.r.Close() }
