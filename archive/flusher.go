package archive

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// flusher writes a Writer's full buffers on a goroutine of its own, so
// that a write(2) that stalls (page cache reclaim, dirty-page throttling,
// a journal commit, the disk itself) does not stall the goroutine that
// appends, and the recorder behind it keeps reading its ring. Buffers go
// to it in order and come back empty; with flushDepth of them in flight
// the appender waits for one: the disk then sets the pace.
//
// Where the filesystem takes O_DIRECT (a flushJob with df), the whole
// blocks of a full buffer are written to df, from the disk's DMA straight
// out of the buffer: no copy into the page cache and no writeback, which
// on this machine kind took as much CPU as the recorder's own work
// (BenchmarkRecord's profile: half its CPU in write(2)). The tail shorter
// than a block is not written then: the Writer keeps it at the head of
// its next buffer, and the block is written whole, directly, once it
// fills. A buffer that a Push or Flush sends before it is full goes
// through the page cache (f), all of it (see direct).
//
// Who wakes whom: the writer's goroutine sends a job on work and takes a
// buffer from free (waiting when none is there); the flusher's goroutine
// waits on work, writes, syncs when SyncInterval says, and sends the
// buffer back on free. The writer waits for every job sent (pending) in
// Writer.Flush, seal and Close, before it syncs, closes or renames.
type flusher struct {
	work    chan flushJob
	free    chan []byte
	pending sync.WaitGroup // jobs sent and not written; Add and Wait on the writer's goroutine only
	every   time.Duration  // SyncInterval's period; 0: no interval syncs

	// err is the first write or sync error: stored by the flusher's
	// goroutine, loaded by the writer's, which breaks on it.
	err atomic.Pointer[error]
	// lastSync is when the data was last made durable (unix ns), and
	// unsynced says something was written since: stored by whichever
	// goroutine syncs (the flusher's, or the writer's once drained) and
	// by the flusher after a write, loaded by Writer.SyncDue.
	lastSync atomic.Int64
	unsynced atomic.Bool
	// kickF, kickFrom and kickTo are the flusher's own: the range of the
	// file written since the last writeback kick.
	kickF            *os.File
	kickFrom, kickTo int64
	size             int            // a buffer's capacity
	flushes, syncs   *atomic.Uint64 // the Writer's counters
	done             chan struct{}
}

// flushDepth is how many buffers may wait to be written: with 1 MiB
// buffers, 4 MiB, or a few milliseconds of the disk's bandwidth.
const flushDepth = 4

// flushJob is one buffer to write: b goes to the segment at offset off.
type flushJob struct {
	f    *os.File // the segment, through the page cache
	df   *os.File // the segment opened O_DIRECT; nil: write all of b to f
	name string   // the segment's data file, for errors
	off  int64
	b    []byte
	tail bool // write b's last partial block too (to f): a Flush wants it readable
}

// direct is how many bytes of j.b go to j.df: the whole blocks of a full
// buffer. A Push or Flush (tail) goes through the page cache whole: it
// comes every FlushDelay while the recorder keeps up, and small appending
// writes with O_DIRECT each allocate blocks and update the file's size
// through the journal, where the page cache allocates once for many; a
// recorder waiting on those fell a ring behind under load
// (TestArchiveCatchup). A buffer that append grew may not be aligned: it
// goes to f too.
func (j *flushJob) direct() int {
	if j.df == nil || j.tail || !isAligned(j.b) {
		return 0
	}
	return len(j.b) &^ (blockAlign - 1)
}

func newFlusher(size int, every time.Duration, st *writerCounters) *flusher {
	fl := &flusher{work: make(chan flushJob, flushDepth), free: make(chan []byte, flushDepth+1), every: every,
		size: size, flushes: &st.flushes, syncs: &st.syncs, done: make(chan struct{})}
	fl.lastSync.Store(time.Now().UnixNano())
	for range flushDepth {
		fl.free <- alignedBuffer(size)
	}
	go fl.run()
	return fl
}

func (fl *flusher) run() {
	defer close(fl.done)
	for j := range fl.work {
		if fl.err.Load() == nil {
			fl.write(j)
		}
		b := j.b[:0]
		if !isAligned(b) { // grown by an entry larger than the buffer
			b = alignedBuffer(fl.size)
		}
		fl.free <- b
		fl.pending.Done()
	}
}

func (fl *flusher) write(j flushJob) {
	n := j.direct()
	if err := writeAt(j.df, j.b[:n], j.off); err != nil {
		fl.fail(fmt.Errorf("%s: %w", j.name, err))
		return
	}
	if j.df == nil || n == 0 || j.tail {
		if err := writeAt(j.f, j.b[n:], j.off+int64(n)); err != nil {
			fl.fail(fmt.Errorf("%s: %w", j.name, err))
			return
		}
		fl.kick(j.f, j.off+int64(len(j.b)))
	}
	fl.flushes.Add(1)
	fl.unsynced.Store(true)
	if fl.every > 0 && fl.due() {
		if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
			fl.fail(fmt.Errorf("%s: %w", j.name, os.NewSyscallError("fdatasync", err)))
			return
		}
		fl.synced()
	}
}

// due reports whether SyncInterval's period has passed since the last
// sync.
func (fl *flusher) due() bool {
	return time.Now().UnixNano()-fl.lastSync.Load() >= int64(fl.every)
}

// synced notes a sync of everything written.
func (fl *flusher) synced() {
	fl.unsynced.Store(false)
	fl.lastSync.Store(time.Now().UnixNano())
	fl.syncs.Add(1)
}

// kickEvery: once this much was written to a segment, its writeback is
// started (sync_file_range WRITE: it does not wait). The kernel would
// otherwise hold the dirty pages until dirty_background_ratio of memory
// (gigabytes) or dirty_expire (30 s), then write them all at once, and a
// sync (interval, segment, Close) would wait for all of them: started
// early, the disk writes while the recorder does, and a sync finds little
// left. RocksDB's bytes_per_sync is the same idea.
const kickEvery = 8 << 20

func (fl *flusher) kick(f *os.File, end int64) {
	if f != fl.kickF {
		fl.kickF, fl.kickFrom = f, 0
	}
	fl.kickTo = end
	if fl.kickTo-fl.kickFrom < kickEvery {
		return
	}
	// Advice only: an error here changes nothing the writes did.
	unix.SyncFileRange(int(f.Fd()), fl.kickFrom, fl.kickTo-fl.kickFrom, unix.SYNC_FILE_RANGE_WRITE)
	fl.kickFrom = fl.kickTo
}

func (fl *flusher) fail(err error) { fl.err.CompareAndSwap(nil, &err) }

// error is the flusher's first error, nil if none.
func (fl *flusher) error() error {
	if p := fl.err.Load(); p != nil {
		return *p
	}
	return nil
}

// writeAt writes all of b to f at off (nothing when b is empty).
func writeAt(f *os.File, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	_, err := f.WriteAt(b, off)
	return err
}

// send hands j to be written and returns an empty buffer holding the
// last keep bytes of j.b (a partial block the next direct write begins
// with). The copy is made before j is sent: the flusher may hand j.b
// back to the pool as soon as it has it.
func (fl *flusher) send(j flushJob, keep int) []byte {
	b := <-fl.free
	b = append(b, j.b[len(j.b)-keep:]...)
	fl.pending.Add(1)
	fl.work <- j
	return b
}

// drain waits until everything sent is written; it returns the first
// error of a write or sync.
func (fl *flusher) drain() error {
	fl.pending.Wait()
	return fl.error()
}

// close ends the flusher's goroutine once it wrote what was sent.
func (fl *flusher) close() {
	close(fl.work)
	<-fl.done
}
