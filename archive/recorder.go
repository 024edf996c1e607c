package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/shm"
)

// Start says where a Recorder begins on the first ring it attaches to.
// Every later ring (a producer restart) is recorded as StartResume says.
type Start int

const (
	// StartResume goes on after the archive's last sequence when the ring
	// is the one the archive's last epoch records; a new ring (a new
	// epoch) is recorded from its oldest record.
	StartResume Start = iota
	// StartOldest begins at the ring's oldest record, never before what
	// the archive already holds of this ring.
	StartOldest
	// StartSeq begins at RecorderConfig.Seq, clamped as StartOldest is.
	StartSeq
)

func (s Start) String() string {
	switch s {
	case StartResume:
		return "resume"
	case StartOldest:
		return "oldest"
	case StartSeq:
		return "seq"
	}
	return fmt.Sprintf("start(%d)", int(s))
}

// ParseStart parses where recording starts: "resume", "oldest" or a
// sequence number N (1 or more).
func ParseStart(s string) (Start, uint64, error) {
	switch s {
	case "resume":
		return StartResume, 0, nil
	case "oldest":
		return StartOldest, 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, 0, fmt.Errorf("archive: start %q: want resume, oldest or a sequence number (1 or more)", s)
	}
	return StartSeq, n, nil
}

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	Ring  string // the ring's path (a producer's ring or a mirror's)
	Start Start
	Seq   uint64 // StartSeq's sequence
	// FlushDelay is the longest a record waits in the write buffer once
	// the recorder caught up with the ring (DefaultFlushDelay when 0).
	FlushDelay time.Duration
	// Poll is how often, while idle or waiting for a ring, the recorder
	// checks for a ring replaced, cut or created (DefaultPoll when 0).
	Poll time.Duration
}

const (
	DefaultFlushDelay = 5 * time.Millisecond
	DefaultPoll       = 100 * time.Millisecond
)

// check validates c and fills its defaults.
func (c *RecorderConfig) check() error {
	switch {
	case c.Ring == "":
		return errors.New("archive: recorder: no ring path")
	case c.Start < StartResume || c.Start > StartSeq:
		return fmt.Errorf("archive: recorder: start %d", int(c.Start))
	case c.Start == StartSeq && c.Seq == 0:
		return errors.New("archive: recorder: start at sequence 0 (the first is 1)")
	case c.FlushDelay < 0:
		return fmt.Errorf("archive: recorder: flush delay %v", c.FlushDelay)
	case c.Poll < 0:
		return fmt.Errorf("archive: recorder: poll %v", c.Poll)
	}
	if c.FlushDelay == 0 {
		c.FlushDelay = DefaultFlushDelay
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	return nil
}

// Recorder follows a ring and appends every record to a Writer: each
// record it read once, with its sequence and the time it saw it, and a
// gap entry for each range it could not read (it fell more than a ring
// behind, a sparse ring's holes, a blob the arena lapped). One goroutine
// runs it; Stats may be called from any.
type Recorder struct {
	w   *Writer
	cfg RecorderConfig
	ws  shm.WaitStrategy

	ring    *shm.Ring // nil while waiting for one
	src     Source
	blob    bool
	payload int
	started bool   // cfg.Start applied (to the first ring)
	next    uint64 // next sequence to record
	rec     []byte // a record's wire bytes (scratch)
	gapFrom uint64 // a pending gap: gapFrom..gapTo (gapFrom 0: none)
	gapTo   uint64
	checked time.Time // last check for a replaced or cut ring

	base WriterStats // the writer's counters when the recorder was made
	st   recorderCounters
}

// recorderCounters are what Stats reads from other goroutines.
type recorderCounters struct {
	epoch, next, writeSeq  atomic.Uint64
	epochs, replaced, cuts atomic.Uint64
}

// NewRecorder makes a recorder of the ring cfg.Ring into w. Run starts it.
func NewRecorder(w *Writer, cfg RecorderConfig) (*Recorder, error) {
	if w == nil {
		return nil, errors.New("archive: recorder: no writer")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := &Recorder{w: w, cfg: cfg, ws: shm.FutexWait(64), base: w.Stats()}
	return r, nil
}

// RecorderStats counts a Recorder's work.
type RecorderStats struct {
	Ring     string
	Epoch    uint64 // the epoch being recorded (0 before the first ring)
	Next     uint64 // next sequence to record
	WriteSeq uint64 // the ring's write_seq when last seen
	Lag      uint64 // WriteSeq - (Next-1)
	// Records and gaps appended by this recorder (GapRecords: the
	// sequences its gaps cover); Epochs it began; Replaced: rings replaced
	// under it (a producer restart); Cuts: rings cut under their mapping.
	Records, Gaps, GapRecords, Epochs, Replaced, Cuts uint64
	Writer                                            WriterStats
}

// Stats returns the recorder's counters; safe from any goroutine.
func (r *Recorder) Stats() RecorderStats {
	ws := r.w.Stats()
	s := RecorderStats{Ring: r.cfg.Ring, Epoch: r.st.epoch.Load(), Next: r.st.next.Load(), WriteSeq: r.st.writeSeq.Load(),
		Records: ws.Records - r.base.Records, Gaps: ws.Gaps - r.base.Gaps, GapRecords: ws.GapRecords - r.base.GapRecords,
		Epochs: r.st.epochs.Load(), Replaced: r.st.replaced.Load(), Cuts: r.st.cuts.Load(), Writer: ws}
	if s.Next > 0 && s.WriteSeq >= s.Next {
		s.Lag = s.WriteSeq - (s.Next - 1)
	}
	return s
}

// errReplaced ends a ring's session: its path names another file now.
var errReplaced = errors.New("archive: ring replaced")

// Run records until ctx ends (it returns nil, what it wrote flushed) or
// the writer breaks (an error wrapping ErrBroken: a full disk; the ring
// is only ever read). It waits for the ring to exist; a replaced ring (a
// new file at the path: a producer restart) or a ring cut under its
// mapping starts a new epoch with the next valid ring at the path.
func (r *Recorder) Run(ctx context.Context) error {
	defer r.detach()
	for ctx.Err() == nil {
		err := shm.Protect(func() error { return r.session(ctx) })
		switch {
		case err == nil:
		case errors.Is(err, errReplaced):
			r.st.replaced.Add(1)
			r.detach()
		case errors.Is(err, shm.ErrTruncated):
			r.st.cuts.Add(1)
			r.detach()
		default:
			return err
		}
	}
	return r.finish()
}

// session attaches to the ring if need be and follows it until ctx ends,
// the ring is replaced or cut, or the writer fails.
func (r *Recorder) session(ctx context.Context) error {
	if r.ring == nil {
		ok, err := r.attach()
		if err != nil {
			return err
		}
		if !ok {
			idle.Sleep(ctx, r.cfg.Poll)
			return nil
		}
	}
	return r.follow(ctx)
}

// attach opens the ring at the path and begins recording it; ok is false
// when there is no valid ring there yet. err is the writer's.
func (r *Recorder) attach() (ok bool, err error) {
	ring, err := shm.Open(r.cfg.Ring, shm.OpenOptions{Notify: true})
	if err != nil {
		return false, nil
	}
	r.ring = ring // closed by detach, also after a fault below
	src, err := SourceOf(ring)
	if err != nil {
		r.detach()
		return false, nil
	}
	next := r.startAt(ring, src)
	if err := r.flushGap(time.Now().UnixNano()); err != nil {
		r.detach()
		return false, err
	}
	fresh, err := r.w.Begin(src, next, time.Now().UnixNano())
	if err != nil {
		r.detach()
		return false, r.werr(err)
	}
	if fresh {
		r.st.epochs.Add(1)
	}
	r.st.epoch.Store(r.w.epoch)
	r.src, r.started = src, true
	r.blob, r.payload = src.Blob(), int(src.PayloadSize)
	if cap(r.rec) < r.payload {
		r.rec = make([]byte, r.payload, r.payload+4096)
	}
	r.next, r.checked = next, time.Now()
	r.st.next.Store(next)
	return true, nil
}

// SourceOf identifies an open ring: its geometry and its file's device
// and inode. It fails when the file at the ring's path is no longer the
// one mapped (replaced).
func SourceOf(ring *shm.Ring) (Source, error) {
	st, err := os.Stat(ring.Path())
	if err != nil {
		return Source{}, fmt.Errorf("archive: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || ring.Replaced() {
		return Source{}, fmt.Errorf("archive: %s was replaced", ring.Path())
	}
	return Source{Geometry: GeometryOf(ring.Layout()), Dev: uint64(sys.Dev), Ino: sys.Ino}, nil
}

// startAt is the first sequence to record of ring src.
func (r *Recorder) startAt(ring *shm.Ring, src Source) uint64 {
	_, psrc, last, ok := r.w.Position()
	same := ok && psrc.Same(src)
	start := StartResume
	if !r.started {
		start = r.cfg.Start
	}
	var n uint64
	switch start {
	case StartResume:
		if same {
			return last + 1
		}
		return ring.Oldest()
	case StartOldest:
		n = ring.Oldest()
	case StartSeq:
		n = max(r.cfg.Seq, ring.Oldest())
	}
	if same {
		n = max(n, last+1)
	}
	return n
}

// detach closes the ring being followed, if any.
func (r *Recorder) detach() {
	if r.ring != nil {
		r.ring.Close()
		r.ring = nil
	}
}

// finish writes a pending gap and flushes: the end of Run.
func (r *Recorder) finish() error {
	if err := r.flushGap(time.Now().UnixNano()); err != nil {
		return err
	}
	if err := r.w.Flush(); err != nil {
		return r.werr(err)
	}
	return nil
}

// werr is the error of a failed write: one wrapping ErrBroken once the
// writer broke (a full disk), err itself otherwise.
func (r *Recorder) werr(err error) error {
	if r.w.err != nil {
		return fmt.Errorf("archive: record %s: %w", r.cfg.Ring, r.w.usable())
	}
	return fmt.Errorf("archive: record %s: %w", r.cfg.Ring, err)
}
