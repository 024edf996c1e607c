package shm

import (
	"context"
	"fmt"
	"time"
)

// StartMode says where a new reader begins.
type StartMode int

const (
	// StartLatest starts at the newest record (write_seq), if any.
	StartLatest StartMode = iota
	// StartHead waits for records published after attaching (write_seq + 1).
	StartHead
	// StartOldest replays everything the ring still retains. On a busy
	// lossless ring the producer sees a new registration within half a
	// ring, so the first records may already be gone: they count as lapped.
	StartOldest
	// StartSequence starts at ReadOptions.Sequence, clamped to the oldest
	// retained record (the skipped ones count as lapped).
	StartSequence
)

// ReadOptions configure a reader.
type ReadOptions struct {
	Start    StartMode
	Sequence uint64 // for StartSequence
	// Name is recorded in the reader registry and the checkpoint file.
	Name string
	// OffsetFile, when set, is a checkpoint: if it exists the reader resumes
	// after its last committed sequence (overriding Start); CommitOffset
	// writes it.
	OffsetFile string
	// NoRegister keeps the reader out of the registry (and the mapping
	// read-only). On a lossless ring an unregistered reader can be lapped.
	NoRegister bool
	// Wait is the strategy of blocking receives (default SpinYield(128)).
	Wait *WaitStrategy
}

// Reader is one consumer's cursor over a ring, byte-oriented: Consumer[T]
// and BlobConsumer[M] wrap it. A Reader is used by one goroutine at a time.
type Reader struct {
	r      *Ring
	next   uint64 // next sequence wanted
	last   uint64 // sequence of the last record returned
	lapped uint64
	recv   uint64
	// Multi-producer rings: records skipped because their producer did not
	// finish them within InFlightTimeout of this reader first seeing them
	// in flight (inFlight, since).
	dropped  uint64
	inFlight uint64
	since    time.Time
	reg      int // registry entry, -1 when unregistered
	sparse   bool
	w        *waiter
	ckpt     *checkpoint
}

// OpenReader attaches a reader to the ring at path. The ring is mapped
// read-only unless the reader registers (the ring has a registry and
// NoRegister is not set) or sleeps on the futex (it announces itself in
// waiting_consumers). A lossy ring whose file the caller may not write is
// read unregistered, and a futex wait then degrades to short sleeps.
func OpenReader(path string, opts ReadOptions) (*Reader, error) {
	futex := opts.Wait != nil && opts.Wait.sleeps()
	r, err := Open(path, OpenOptions{Notify: futex})
	if err != nil {
		return nil, err
	}
	if !opts.NoRegister && r.layout.RegistryCount > 0 {
		rw, err := Open(path, OpenOptions{Writable: true})
		switch {
		case err == nil:
			r.Close()
			r = rw
		case r.layout.Flags&FlagLossless != 0:
			r.Close()
			return nil, fmt.Errorf("open reader %s: registering needs write access: %w", path, err)
		default:
			opts.NoRegister = true
		}
	}
	rd, err := newReader(r, opts)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open reader %s: %w", path, err)
	}
	return rd, nil
}

func newReader(r *Ring, opts ReadOptions) (*Reader, error) {
	rd := &Reader{r: r, reg: -1, sparse: r.layout.Flags&FlagSparse != 0, w: &waiter{ws: SpinYield(128)}}
	if opts.Wait != nil {
		rd.w.ws = *opts.Wait
	}
	w := r.writeSeq.Load()
	switch opts.Start {
	case StartLatest:
		rd.next = max(w, 1)
	case StartHead:
		rd.next = w + 1
	case StartOldest:
		rd.next = r.oldest(w)
	case StartSequence:
		rd.next = max(opts.Sequence, 1)
	default:
		return nil, fmt.Errorf("%w: start mode %d", ErrInvalid, opts.Start)
	}
	if opts.OffsetFile != "" {
		c, last, err := openCheckpoint(opts.OffsetFile, opts.Name)
		if err != nil {
			return nil, err
		}
		rd.ckpt = c
		if last > 0 {
			rd.next = last + 1
		}
	}
	if o := r.oldest(w); rd.next < o {
		rd.lapped += o - rd.next
		rd.next = o
	}
	if !opts.NoRegister && r.layout.RegistryCount > 0 {
		rd.reg = r.register(rd.next, opts.Name)
		if rd.reg < 0 && r.layout.Flags&FlagLossless != 0 {
			rd.closeCheckpoint()
			return nil, fmt.Errorf("%w (%d entries, all held by live readers)", ErrNoReaderSlots, r.layout.RegistryCount)
		}
	}
	return rd, nil
}

// Ring is the ring this reader reads.
func (rd *Reader) Ring() *Ring { return rd.r }

// Next is the sequence the reader wants next.
func (rd *Reader) Next() uint64 { return rd.next }

// Seq is the sequence of the last record returned (0 before the first).
func (rd *Reader) Seq() uint64 { return rd.last }

// Lapped counts records this reader never saw: overwritten before it got to
// them, holes of a sparse ring, or skipped on attach.
func (rd *Reader) Lapped() uint64 { return rd.lapped }

// Dropped counts records of a multi-producer ring this reader skipped
// because their producer had claimed them but did not finish writing them
// within InFlightTimeout (it died mid-write, or was descheduled that long).
func (rd *Reader) Dropped() uint64 { return rd.dropped }

// Received counts records returned.
func (rd *Reader) Received() uint64 { return rd.recv }

// Registered reports whether the reader holds a registry entry.
func (rd *Reader) Registered() bool { return rd.reg >= 0 }

// TryRecv copies the next record's payload into dst (up to len(dst) bytes;
// pass PayloadSize bytes for the whole slot) and returns its sequence, or
// ok false when there is nothing new. It never returns a torn record: a
// lapped reader jumps to the oldest retained record and counts the skip.
func (rd *Reader) TryRecv(dst []byte) (seq uint64, ok bool) {
	if rd.r.closed {
		return 0, false
	}
	seq, ok = rd.poll(dst)
	if ok && rd.reg >= 0 {
		rd.r.entry(rd.reg).cursor.Store(rd.next)
	}
	return seq, ok
}

// poll is TryRecv without publishing the registry cursor (batches publish
// once at their end).
func (rd *Reader) poll(dst []byte) (uint64, bool) {
	r := rd.r
	if n := r.layout.PayloadSize(); len(dst) > n {
		dst = dst[:n]
	}
	rd.w.inFlight = false
	for range 4 { // a lap or a hole moves the cursor; retry a few times
		c := rd.next
		s, ok := r.readSlot(c, dst)
		if ok {
			rd.next = c + 1
			rd.last = c
			rd.recv++
			return c, true
		}
		switch st, s := r.classify(c, s); st {
		case SlotNotYet:
			return 0, false
		case SlotOverwritten:
			rd.lap(c, s)
		case SlotHole:
			if !rd.sparse {
				return 0, false
			}
			rd.skipHoles(c)
		case slotInFlight:
			if !rd.expired(c) {
				rd.w.inFlight = true
				return 0, false
			}
			rd.dropped++
			rd.next = c + 1
		}
	}
	return 0, false
}

// expired reports whether record c of a multi-producer ring has been in
// flight for longer than InFlightTimeout since this reader first saw it so.
// The clock is read only on this slow path.
func (rd *Reader) expired(c uint64) bool {
	now := time.Now()
	if rd.inFlight != c || rd.since.IsZero() {
		rd.inFlight, rd.since = c, now
		return false
	}
	return now.Sub(rd.since) > InFlightTimeout
}

// lap moves a reader whose record c was overwritten (the slot showed s) to
// the oldest record the ring still retains.
func (rd *Reader) lap(c, s uint64) {
	r := rd.r
	nc := max(r.oldest(r.writeSeq.Load()), c+1)
	if s != SlotWriting && s >= r.layout.Capacity {
		nc = max(nc, s-r.layout.Capacity+1)
	}
	rd.lapped += nc - c
	rd.next = nc
}

// skipHoles moves the reader of a sparse ring from hole c to the next slot
// that holds its own sequence, at most write_seq + 1, counting the holes.
func (rd *Reader) skipHoles(c uint64) {
	r := rd.r
	w := r.writeSeq.Load()
	i := max(c+1, r.oldest(w))
	for ; i <= w; i++ {
		if s := r.slotSeq(i).Load(); s >= i { // present, being lapped, or lapped
			break
		}
	}
	rd.lapped += i - c
	rd.next = i
}

// Recv waits (with the reader's strategy) for the next record, at most
// timeout (0: forever). It returns ErrTimeout or ErrClosed.
func (rd *Reader) Recv(dst []byte, timeout time.Duration) (uint64, error) {
	return rd.recvUntil(nil, deadlineAfter(timeout), dst)
}

// RecvContext waits for the next record until ctx is done, returning ctx's
// error then, promptly: a futex sleep is woken by the context's end (see
// waiter), a polling strategy checks it between polls.
func (rd *Reader) RecvContext(ctx context.Context, dst []byte) (uint64, error) {
	return rd.recvUntil(ctx, ctxDeadline(ctx), dst)
}

func (rd *Reader) recvUntil(ctx context.Context, deadline time.Time, dst []byte) (uint64, error) {
	return waitFor(rd, ctx, deadline, func() (uint64, bool, error) {
		seq, ok := rd.TryRecv(dst)
		return seq, ok, nil
	})
}

// waitFor polls try with the reader's wait strategy until it yields a
// record or an error, the deadline passes (ErrTimeout) or ctx is done.
func waitFor[R any](rd *Reader, ctx context.Context, deadline time.Time, try func() (R, bool, error)) (R, error) {
	rings := [1]*Ring{rd.r}
	return recvLoop(rd.w, ctx, deadline, rings[:], rd.isClosed, try, rd.ready)
}

func (rd *Reader) isClosed() bool { return rd.r.closed }

// ready reports whether a poll may find something new: write_seq reached
// the wanted record and, on a multi-producer ring, its slot is no longer
// in flight.
func (rd *Reader) ready() bool {
	r, c := rd.r, rd.next
	if r.writeSeq.Load() < c {
		return false
	}
	if !r.multi {
		return true
	}
	s := r.slotSeq(c).Load()
	return s == c || s != SlotWriting && s > c
}

// CommitOffset records the last returned sequence in the offset file.
func (rd *Reader) CommitOffset() error {
	if rd.r.closed {
		return ErrClosed
	}
	if rd.ckpt == nil {
		return fmt.Errorf("%w: reader has no offset file", ErrInvalid)
	}
	rd.ckpt.commit(rd.next - 1)
	return nil
}

func (rd *Reader) closeCheckpoint() {
	if rd.ckpt != nil {
		rd.ckpt.close()
		rd.ckpt = nil
	}
}

// Close releases the registry entry and unmaps the ring.
func (rd *Reader) Close() error {
	if rd.r.closed {
		return nil
	}
	if rd.reg >= 0 {
		rd.r.unregister(rd.reg)
		rd.reg = -1
	}
	rd.closeCheckpoint()
	rd.w.release()
	return rd.r.Close()
}
