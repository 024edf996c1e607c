package archive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Writer appends entries to an archive: one goroutine's, one Writer per
// directory (a lock file says so to other processes). Every sequence of
// an epoch is written once, in order: a record, or part of a gap.
//
// Appends go to a buffer, written to the segment in one write when it
// fills (on the flusher's goroutine: the append goes on with another
// buffer), at Push and at Flush (which waits for the write); Options.Sync
// says when they are made durable. Where the filesystem takes O_DIRECT
// (and Options.PageCache does not ask otherwise), whole blocks bypass the
// page cache (see flusher).
type Writer struct {
	dir  string
	opts Options
	lock *os.File

	f    *os.File // the segment being written; nil before the first entry of an epoch
	df   *os.File // the same opened O_DIRECT; nil: all writes go to f
	seg  segment
	x    *index // its index so far
	size int64  // its data bytes, buffered ones included
	// buf holds the segment's bytes from file offset bufOff to size: with
	// df, bufOff is block-aligned and buf begins with the partial block
	// the last write left (of which the first inFile bytes are written,
	// through the page cache). bufTime is the time of the first entry
	// appended since the last hand-off to the flusher (0: none).
	buf     []byte
	bufOff  int64
	inFile  int
	bufTime int64

	begun    bool
	epoch    uint64
	src      Source
	shape    shape  // src's
	last     uint64 // the epoch's last sequence written (a gap's Last)
	lastTime int64
	err      error // the write error that broke the writer

	// records and bytes count per entry, in the writer's goroutine;
	// Flush publishes them in st, which Stats reads.
	records, bytes uint64
	st             writerCounters

	comp *compressor // Options.Compress's (nil: none)
	io   *flusher    // writes full buffers
}

// OpenWriter opens the archive in dir for appending, making dir if need
// be. It recovers what a crash left: a torn entry at the end of the last
// segment is cut (Stats().TornBytes), a segment left unsealed is sealed.
// Position then tells where the archive ends.
func OpenWriter(dir string, opts Options) (*Writer, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, opts: opts, lock: lock, buf: alignedBuffer(opts.BufferSize + 64<<10)}
	var every time.Duration
	if opts.Sync == SyncInterval {
		every = opts.SyncEvery
	}
	w.io = newFlusher(opts.BufferSize+64<<10, every, &w.st)
	if opts.Compress {
		w.comp = newCompressor(dir, opts.Sync != SyncNone)
	}
	if err := w.recover(); err != nil {
		if w.comp != nil {
			w.comp.close()
		}
		w.io.close()
		lock.Close()
		return nil, fmt.Errorf("archive: open %s: %w", dir, err)
	}
	return w, nil
}

// lockDir takes the archive's writer lock (flock, released when the file
// closes, also by a crash).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockExt), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, os.NewSyscallError("flock", err)
	}
	return f, nil
}

// Position is where the archive ends: the epoch being written, its ring,
// and its last sequence (a gap's last). ok is false for an empty archive.
func (w *Writer) Position() (epoch uint64, src Source, last uint64, ok bool) {
	return w.epoch, w.src, w.last, w.begun
}

// Begin readies the writer for the records of src from sequence next on.
// When src is the ring the archive's last epoch records and next follows
// its last sequence, the epoch goes on (a gap entry covers any sequences
// between); otherwise a new epoch begins. It reports whether it did.
func (w *Writer) Begin(src Source, next uint64, t int64) (newEpoch bool, err error) {
	if err := w.usable(); err != nil {
		return false, err
	}
	if next == 0 {
		return false, fmt.Errorf("%w: begin at sequence 0", ErrOrder)
	}
	if w.begun && src.Same(w.src) && next > w.last {
		if next > w.last+1 {
			return false, w.Gap(w.last+1, next-1, t)
		}
		return false, nil
	}
	if err := w.seal(); err != nil {
		return false, err
	}
	w.epoch++
	w.src, w.shape, w.last, w.begun = src, src.shape(), next-1, true
	w.st.epochs.Add(1)
	return true, nil
}

// Append writes record seq, seen at t (unix ns): rec is its wire bytes
// (the slot payload, then a blob ring's blob). seq must follow the last.
func (w *Writer) Append(seq uint64, t int64, rec []byte) error {
	if err := w.next(seq); err != nil {
		return err
	}
	if err := checkRecord(rec, &w.shape); err != nil {
		return err
	}
	w.records++
	return w.put(KindRecord, seq, seq, t, rec)
}

// Gap writes that the records from to last (inclusive), seen missing at
// t, are not in the archive: the recorder could not read them.
func (w *Writer) Gap(from, last uint64, t int64) error {
	if err := w.next(from); err != nil {
		return err
	}
	if last < from {
		return fmt.Errorf("%w: gap %d..%d", ErrOrder, from, last)
	}
	w.st.gaps.Add(1)
	w.st.gapRecords.Add(last - from + 1)
	return w.put(KindGap, from, last, t, le.AppendUint64(nil, last))
}

func (w *Writer) next(seq uint64) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !w.begun {
		return fmt.Errorf("%w: Begin first", ErrOrder)
	}
	if seq != w.last+1 {
		return fmt.Errorf("%w: sequence %d after %d", ErrOrder, seq, w.last)
	}
	return nil
}

func (w *Writer) usable() error {
	switch {
	case w.lock == nil:
		return ErrClosed
	case w.err != nil:
		return fmt.Errorf("%w: %w", ErrBroken, w.err)
	}
	return nil
}

// put buffers one entry, starting a segment first when there is none or
// the one being written is full.
func (w *Writer) put(k Kind, seq, last uint64, t int64, p []byte) error {
	t = max(t, w.lastTime) // times never go back: the time index is sorted
	if w.f == nil || w.size >= w.opts.SegmentSize {
		if err := w.rotate(seq, t); err != nil {
			return err
		}
	}
	off := w.size
	n := len(w.buf)
	if w.bufTime == 0 {
		w.bufTime = t
	}
	w.buf = appendEntry(w.buf, k, seq, t, p)
	w.size += int64(len(w.buf) - n)
	w.x.add(&Entry{Kind: k, Seq: seq, Last: last, Time: t}, off, w.size)
	w.last, w.lastTime = last, t
	w.bytes += uint64(len(w.buf) - n)
	if len(w.buf) >= w.opts.BufferSize {
		return w.handoff(false)
	}
	return nil
}

// rotate seals the segment being written, if any, and starts the next
// at sequence first.
func (w *Writer) rotate(first uint64, t int64) error {
	if err := w.seal(); err != nil {
		return err
	}
	s := segment{epoch: w.epoch, first: first, base: segBase(w.dir, w.epoch, first)}
	w.seg = s
	h := header{Epoch: w.epoch, First: first, Created: t, Source: w.src}
	f, err := createSegment(s, h)
	if err != nil {
		return w.fail(err)
	}
	if err := w.use(f, s.data(), headerSize); err != nil {
		return w.fail(err)
	}
	w.x = &index{size: headerSize, last: first - 1}
	w.st.epoch.Store(w.epoch)
	return nil
}

// createSegment makes the data file of s holding header h, open for
// appending. The header is written under a temporary name first, so
// that a reader never lists a segment without its header.
func createSegment(s segment, h header) (*os.File, error) {
	tmp := s.base + dataExt + tmpExt
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	var b [headerSize]byte
	h.put(b[:])
	if _, err = f.Write(b[:]); err == nil {
		err = os.Link(tmp, s.base+dataExt) // fails if the segment exists
	}
	os.Remove(tmp)
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// handoff sends the buffer to the flusher, which writes it to the
// segment (and syncs when SyncInterval says a sync is due), and goes on
// with another: the append does not wait for the write. tail asks for
// every byte to be written (Push, Flush); without it, a direct writer's
// last partial block waits at the head of the next buffer.
func (w *Writer) handoff(tail bool) error {
	if err := w.io.error(); err != nil {
		return w.fail(err)
	}
	if w.f == nil || len(w.buf) == w.inFile {
		return nil
	}
	w.st.records.Store(w.records)
	w.st.bytes.Store(w.bytes)
	w.st.last.Store(w.last)
	keep := 0
	if w.df != nil {
		keep = len(w.buf) & (blockAlign - 1)
	}
	j := flushJob{f: w.f, df: w.df, name: w.seg.data(), off: w.bufOff, b: w.buf, tail: tail}
	w.bufOff += int64(len(w.buf) - keep)
	w.buf = w.io.send(j, keep)
	w.inFile, w.bufTime = 0, 0
	if tail {
		w.inFile = keep
	}
	return nil
}

// Pending is the time (unix ns, as appended) of the oldest entry not yet
// handed to be written, 0 when there is none.
func (w *Writer) Pending() int64 { return w.bufTime }

// Push hands the buffered entries to be written, without waiting for the
// write: readers see them a write later.
func (w *Writer) Push() error {
	if err := w.usable(); err != nil {
		return err
	}
	return w.handoff(true)
}

// Flush writes the buffered entries to the segment and returns once they
// are written (readers see them); a sync is made when Options.Sync says
// one is due.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.handoff(true); err != nil {
		return err
	}
	if err := w.io.drain(); err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *Writer) sync() error {
	if err := unix.Fdatasync(int(w.f.Fd())); err != nil {
		return w.fail(fmt.Errorf("%s: %w", w.seg.data(), os.NewSyscallError("fdatasync", err)))
	}
	w.io.synced()
	return nil
}

// SyncDue syncs, with Options.Sync SyncInterval, what was written and
// not synced once SyncEvery has passed since the last sync. The flusher
// syncs as it writes; a writer with nothing more to write (a recorder
// caught up) calls this now and then so that the last writes are not
// left unsynced: a power cut then loses about SyncEvery at most.
func (w *Writer) SyncDue() error {
	if w.opts.Sync != SyncInterval || w.f == nil || !w.io.unsynced.Load() || !w.io.due() {
		return nil
	}
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.io.drain(); err != nil {
		return w.fail(err)
	}
	return w.sync()
}

// fail breaks the writer with err (a full disk, an I/O error), which
// names the file: it takes nothing more; a reopened writer cuts what the
// failed write tore.
func (w *Writer) fail(err error) error {
	w.err = err
	w.st.writeErrors.Add(1)
	return w.err
}

// Close flushes and, unless Options.Sync is SyncNone, syncs what was
// written; the segment being written stays unsealed, for the next
// writer to go on with.
func (w *Writer) Close() error {
	if w.lock == nil {
		return ErrClosed
	}
	var err error
	if w.f != nil {
		err = w.Flush()
		if err == nil && w.opts.Sync != SyncNone {
			err = w.sync()
		}
		w.closeSegment()
	}
	if w.comp != nil {
		w.comp.close() // once what was sealed is compressed
	}
	w.io.close()
	w.lock.Close()
	w.lock = nil
	return err
}
