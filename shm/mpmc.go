package shm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// InFlightTimeout bounds every wait on a multi-producer ring's record whose
// ticket was claimed but whose slot is not written yet (its producer may be
// descheduled, or dead). Past it a reader counts the record as dropped and
// goes on, and a producer that finds its slot still mid-write by another
// drops its own record: nobody ever waits on a dead producer for longer.
var InFlightTimeout = 10 * time.Millisecond

// MultiWriter is one of several producers of a multi-producer ring
// (FlagMPMC), byte-oriented: MpmcProducer[T] wraps it. Any number of
// processes (and goroutines, each with its own MultiWriter) publish into
// the same ring; each record takes a ticket from claim_seq. Every
// MultiWriter holds a shared flock on the ring file, so a new ring can
// replace the file only once all of them are gone.
//
// A MultiWriter is used by one goroutine at a time.
type MultiWriter struct {
	r     *Ring
	stats MultiWriterStats
}

// MultiWriterStats counts one producer's activity.
type MultiWriterStats struct {
	Published uint64 // records written
	Dropped   uint64 // own records dropped (ErrDropped): lapped before written, or slot stuck mid-write
	TakenOver uint64 // slots whose previous lap's producer never wrote them, taken over after InFlightTimeout
}

// CreateMPMC makes a new multi-producer ring at path and returns its first
// producer; more join with OpenMultiWriter. cfg.Flags gets FlagMPMC (and
// LATEST_WINS); lossless, sparse and blob rings cannot be multi-producer.
func CreateMPMC(path string, cfg RingConfig, opts CreateOptions) (*MultiWriter, error) {
	cfg.Flags |= FlagMPMC
	l, err := NewLayout(cfg)
	if err != nil {
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	r, err := createRingFile(path, l, opts)
	if err != nil {
		return nil, err
	}
	// Other producers share the ring: downgrade to a shared lock. (Linux
	// converts by release and re-acquire; a creator racing into that
	// instant would replace the path, never this inode's bytes.)
	if err := unix.Flock(int(r.f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		r.Close()
		return nil, fmt.Errorf("create ring %s: %w", path, os.NewSyscallError("flock", err))
	}
	return &MultiWriter{r: r}, nil
}

// OpenMultiWriter attaches another producer to the multi-producer ring at
// path. It takes a shared flock; a ring whose creator holds an exclusive
// one (the reference implementation's producers do) is joined as it is,
// that creator keeping the file from being replaced.
func OpenMultiWriter(path string) (*MultiWriter, error) {
	r, err := openMulti(path, "open producer")
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(r.f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
		r.Close()
		return nil, fmt.Errorf("open producer %s: %w", path, os.NewSyscallError("flock", err))
	}
	return &MultiWriter{r: r}, nil
}

// openMulti maps the multi-producer ring at path read-write; op names
// the caller in errors.
func openMulti(path, op string) (*Ring, error) {
	r, err := Open(path, OpenOptions{Writable: true})
	if err != nil {
		return nil, err
	}
	if !r.multi {
		r.Close()
		return nil, fmt.Errorf("%s %s: %w: not a multi-producer ring (flags %#x)", op, path, ErrInvalid, uint32(r.layout.Flags))
	}
	return r, nil
}

// Ring is the ring this producer writes.
func (w *MultiWriter) Ring() *Ring { return w.r }

// Stats returns this producer's counters.
func (w *MultiWriter) Stats() MultiWriterStats { return w.stats }

// Close releases the flock and unmaps the ring.
func (w *MultiWriter) Close() error { return w.r.Close() }

// Push takes a ticket, writes p into its slot and publishes it, returning
// the ticket (the record's sequence). It never waits for consumers. It
// returns ErrDropped (with the ticket) when the record could not be written
// without tearing another one: a later lap already holds the slot, or the
// previous lap's producer kept it mid-write past InFlightTimeout.
func (w *MultiWriter) Push(p []byte) (uint64, error) { return w.push(p, nil) }

// PushFunc is Push for records that carry their own sequence: once the
// ticket is taken it calls fill(seq, p) to complete p, then writes p. fill
// runs while the ticket is in flight: keep it short.
func (w *MultiWriter) PushFunc(p []byte, fill func(seq uint64, p []byte)) (uint64, error) {
	return w.push(p, fill)
}

func (w *MultiWriter) push(p []byte, fill func(uint64, []byte)) (uint64, error) {
	r := w.r
	if r.closed {
		return 0, ErrClosed
	}
	if len(p) > r.layout.PayloadSize() {
		return 0, fmt.Errorf("%w: payload of %d bytes, slots hold %d", ErrInvalid, len(p), r.layout.PayloadSize())
	}
	t := r.claimSeq.Add(1) - 1
	if t == 0 { // claim_seq 0: a ring initialised without the reference's 1
		t = r.claimSeq.Add(1) - 1
	}
	if fill != nil {
		fill(t, p)
	}
	if !w.own(t) {
		w.stats.Dropped++
		return t, fmt.Errorf("push %d: %w", t, ErrDropped)
	}
	off := r.slotOff(t)
	r.m.storeBytes(off+8, p)
	if n := r.layout.PayloadSize(); len(p) < n {
		clear(r.m.data[off+8+uint64(len(p)) : off+8+uint64(n)])
	}
	r.slotSeq(t).Store(t)
	w.stats.Published++
	r.advance(t)
	return t, nil
}

// own makes this producer the only writer of ticket t's slot: it waits for
// the slot's previous lap (t − capacity, or 0 on the first lap) to be
// complete and swaps it to SlotWriting with a CompareAndSwap, so producers
// one lap apart never interleave payloads. A previous lap never written
// (its producer died between claim and write) is taken over after
// InFlightTimeout; a slot kept SlotWriting that long is never taken over
// (its writer may only be descheduled, and two writers would tear the
// payload): the record is dropped instead. A later lap in the slot makes
// this record obsolete: dropped too.
func (w *MultiWriter) own(t uint64) bool {
	r := w.r
	word := r.slotSeq(t)
	prev := t - min(t, r.layout.Capacity)
	var deadline time.Time
	stalled := false
	for i := 0; ; i++ {
		cur := word.Load()
		if cur != SlotWriting && cur > t {
			return false
		}
		if (cur == prev || stalled && cur != SlotWriting) && word.CompareAndSwap(cur, SlotWriting) {
			if cur != prev {
				w.stats.TakenOver++
			}
			return true
		}
		if i < 256 {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(InFlightTimeout)
		} else if time.Now().After(deadline) {
			if cur == SlotWriting {
				return false
			}
			stalled = true
		}
		runtime.Gosched()
	}
}

// advance raises write_seq to t unless a later ticket already did (an
// atomic max, as the reference's fetch_max), then wakes sleeping readers.
// write_seq on a multi-producer ring is thus the highest completed ticket:
// tickets below it may still be in flight (see doc.go).
func (r *Ring) advance(t uint64) {
	for {
		cur := r.writeSeq.Load()
		if cur >= t || r.writeSeq.CompareAndSwap(cur, t) {
			break
		}
	}
	// Wake even when write_seq did not move: a reader may be sleeping on
	// this very ticket, completed after a later one.
	if r.waiting.Load() > 0 {
		r.futex.Add(1)
		r.m.futexWake(offFutex)
	}
}

// ClaimSeq is the next ticket a producer of a multi-producer ring will take
// (0 on other rings).
func (r *Ring) ClaimSeq() uint64 {
	if r.closed || !r.multi {
		return 0
	}
	return r.claimSeq.Load()
}

// ReadSeq is the next ticket a queue consumer of a multi-producer ring will
// take (0 on other rings).
func (r *Ring) ReadSeq() uint64 {
	if r.closed || !r.multi {
		return 0
	}
	return r.readSeq.Load()
}

// MultiProducer reports whether the ring is a multi-producer ring.
func (r *Ring) MultiProducer() bool { return r.multi }
