package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ringfire/ringfire/shm"
)

// ReplayConfig configures Replay.
type ReplayConfig struct {
	Ring  string // the ring to write (created with the epoch's geometry, SPARSE)
	Epoch uint64 // 0: the archive's last epoch
	// From and To bound the sequences replayed (inclusive); 0: the
	// epoch's first, its last.
	From, To uint64
	// FromTime and ToTime bound the entries' times (unix ns, inclusive);
	// 0: no bound. Both a sequence and a time bound may be given: an entry
	// is replayed when it is within both.
	FromTime, ToTime int64
	// Speed: 0 replays as fast as it can; 1 keeps the original
	// inter-arrival times (the entries' times); N plays N times faster.
	Speed   float64
	Replace bool  // replace an existing ring of another geometry at Ring
	MaxSize int64 // the ring file's size limit (shm.CreateOptions.MaxSize)
	// Follow: at the end of what is written, wait for more (a recorder
	// still writing the epoch) until ctx ends, or until the archive
	// begins a later epoch (the recorder moved to a new ring).
	Follow bool
}

// ReplayStats counts what Replay wrote.
type ReplayStats struct {
	Records    uint64 // records written into the ring
	Gaps       uint64 // gap entries met (holes of the ring)
	GapRecords uint64 // sequences they cover (within the bounds)
	// First and Last are the first and the last sequence written (0:
	// none).
	First, Last uint64
}

// followPoll is how often a following Replay looks for entries a
// recorder appended.
const followPoll = 2 * time.Millisecond

// epochPolls: a following Replay looks for a later epoch every this
// many polls.
const epochPolls = 50

func (c *ReplayConfig) check() error {
	switch {
	case c.Ring == "":
		return errors.New("archive: replay: no ring path")
	case c.Speed < 0 || math.IsNaN(c.Speed) || math.IsInf(c.Speed, 0):
		return fmt.Errorf("archive: replay: speed %v (want 0 for as fast as possible, or more than 0)", c.Speed)
	case c.To != 0 && c.To < c.From:
		return fmt.Errorf("archive: replay: to %d before from %d", c.To, c.From)
	case c.ToTime != 0 && c.ToTime < c.FromTime:
		return fmt.Errorf("archive: replay: to time %d before from time %d", c.ToTime, c.FromTime)
	case c.FromTime < 0 || c.ToTime < 0:
		return errors.New("archive: replay: negative time bound")
	}
	return nil
}

// Replay writes the records of one epoch of the archive into a new ring
// at cfg.Ring, at their original sequence numbers: the ring has the
// epoch's geometry and is SPARSE, so that the archive's gaps (and what
// the bounds leave out) are holes its readers step over. It publishes in
// batches, and before each pause of a paced replay. It returns once it
// wrote what was asked (the end of the epoch, or To or ToTime; with
// Follow, those bounds or the epoch's end once a later one began), or
// when ctx ends (then with a nil error).
// The ring stays at its path for its readers.
func Replay(ctx context.Context, r *Reader, cfg ReplayConfig) (ReplayStats, error) {
	if err := cfg.check(); err != nil {
		return ReplayStats{}, err
	}
	ep, err := replayEpoch(r, cfg.Epoch)
	if err != nil {
		return ReplayStats{}, err
	}
	var c *Cursor
	if cfg.FromTime > 0 {
		c, err = r.SeekTime(ep.Epoch, cfg.FromTime)
	} else {
		c, err = r.Seek(ep.Epoch, max(cfg.From, 1))
	}
	if err != nil {
		return ReplayStats{}, fmt.Errorf("archive: replay: %w", err)
	}
	defer c.Close()
	w, err := shm.Create(cfg.Ring, ep.Source.RingConfig(), shm.CreateOptions{Replace: cfg.Replace, MaxSize: cfg.MaxSize})
	if err != nil {
		return ReplayStats{}, fmt.Errorf("archive: replay: %w", err)
	}
	defer w.Close()
	p := newPlayer(w, ep.Source.Geometry, cfg)
	defer p.timer.Stop()
	err = shm.Protect(func() error { return p.run(ctx, c) })
	return p.st, err
}

// laterEpoch reports whether the archive holds an epoch after the
// cursor's: its writer began it once it had written all of this one.
func laterEpoch(c *Cursor) bool {
	segs, err := listSegments(c.r.dir)
	return err == nil && len(segs) > 0 && segs[len(segs)-1].epoch > c.epoch
}

// replayEpoch finds epoch (0: the last) among the archive's.
func replayEpoch(r *Reader, epoch uint64) (EpochInfo, error) {
	eps, err := r.Epochs()
	if err != nil {
		return EpochInfo{}, fmt.Errorf("archive: replay: %w", err)
	}
	if len(eps) == 0 {
		return EpochInfo{}, fmt.Errorf("archive: replay: %w: no epoch in %s", ErrNotFound, r.Dir())
	}
	if epoch == 0 {
		return eps[len(eps)-1], nil
	}
	for _, ep := range eps {
		if ep.Epoch == epoch {
			return ep, nil
		}
	}
	return EpochInfo{}, fmt.Errorf("archive: replay: %w: epoch %d in %s", ErrNotFound, epoch, r.Dir())
}

// player writes entries into the ring: it stores each record, publishes
// in batches, and paces by the entries' times.
type player struct {
	w       *shm.Writer
	cfg     ReplayConfig
	blob    bool
	payload int
	slot    []byte // a blob ring's slot, its descriptor rewritten
	batch   int
	pending int    // records stored since the last publish
	stored  uint64 // the last sequence stored
	ended   bool   // a later epoch began: this one gets nothing more
	st      ReplayStats

	// Pacing: entry time t is due at w0 + (t-t0)/Speed.
	t0    int64
	w0    time.Time
	now   time.Time // the clock when last read
	timer *time.Timer
}

func newPlayer(w *shm.Writer, g Geometry, cfg ReplayConfig) *player {
	p := &player{w: w, cfg: cfg, blob: g.Blob(), payload: int(g.PayloadSize), slot: make([]byte, g.PayloadSize),
		batch: int(min(max(g.Capacity/2, 1), 4096)), timer: time.NewTimer(time.Hour)}
	p.timer.Stop()
	return p
}

// run replays the cursor's entries until the bounds, the end (without
// Follow) or ctx's end.
func (p *player) run(ctx context.Context, c *Cursor) error {
	defer p.publish()
	for polls := 1; ; {
		e, err := c.Next()
		if errors.Is(err, io.EOF) {
			if err := p.publish(); err != nil || !p.cfg.Follow || p.ended {
				return err
			}
			if polls++; polls%epochPolls == 0 {
				p.ended = laterEpoch(c)
				continue // read once more: the epoch may have ended since
			}
			if !p.wait(ctx, time.Now().Add(followPoll)) {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("archive: replay: %w", err)
		}
		done, err := p.entry(ctx, e)
		if err != nil || done {
			return err
		}
	}
}

// entry replays e; done reports a bound reached (or ctx's end).
func (p *player) entry(ctx context.Context, e Entry) (done bool, err error) {
	lo, hi := max(e.Seq, p.cfg.From), e.Last
	switch {
	case p.cfg.To != 0 && lo > p.cfg.To, p.cfg.ToTime != 0 && e.Time > p.cfg.ToTime:
		return true, nil
	case e.Time < p.cfg.FromTime || hi < lo:
		return false, nil
	}
	if p.cfg.To != 0 {
		hi = min(hi, p.cfg.To)
	}
	if p.cfg.Speed > 0 && !p.pace(ctx, e.Time) {
		return true, nil
	}
	if e.Kind == KindGap {
		p.st.Gaps++
		p.st.GapRecords += hi - lo + 1
		return hi == p.cfg.To, nil
	}
	if err := p.store(e.Seq, e.Rec); err != nil {
		return true, err
	}
	if p.pending >= p.batch {
		if err := p.publish(); err != nil {
			return true, err
		}
		select {
		case <-ctx.Done():
			return true, nil
		default:
		}
	}
	return e.Seq == p.cfg.To, nil
}

// store writes record seq (its wire bytes rec) into the ring: a blob
// ring's blob into its arena, the descriptor then pointing at it.
func (p *player) store(seq uint64, rec []byte) error {
	slot := rec[:p.payload]
	if p.blob {
		off, err := p.w.AppendBlob(rec[p.payload:])
		if err != nil {
			return fmt.Errorf("archive: replay %d: %w", seq, err)
		}
		copy(p.slot, slot)
		d := shm.DecodeDescriptor(p.slot)
		d.Offset = off
		d.Encode(p.slot)
		slot = p.slot
	}
	if err := p.w.Store(seq, slot); err != nil {
		return fmt.Errorf("archive: replay %d: %w", seq, err)
	}
	if p.st.First == 0 {
		p.st.First = seq
	}
	p.st.Last, p.stored = seq, seq
	p.st.Records++
	p.pending++
	return nil
}

// publish makes what was stored visible to the ring's readers.
func (p *player) publish() error {
	if p.pending == 0 {
		return nil
	}
	p.pending = 0
	if err := p.w.Publish(p.stored); err != nil {
		return fmt.Errorf("archive: replay: %w", err)
	}
	return nil
}

// pace waits until the entry of time t is due (publishing first); false
// when ctx ended. Behind time, it does not wait, nor read the clock
// until an entry is due after the last reading.
func (p *player) pace(ctx context.Context, t int64) bool {
	if p.w0.IsZero() {
		p.t0, p.w0 = t, time.Now()
		p.now = p.w0
		return true
	}
	due := p.w0.Add(time.Duration(float64(t-p.t0) / p.cfg.Speed))
	if !due.After(p.now) {
		return true
	}
	if p.now = time.Now(); !due.After(p.now) {
		return true
	}
	if p.publish() != nil {
		return true // store reports the ring's error
	}
	return p.wait(ctx, due)
}

// wait sleeps until deadline; false when ctx ended first.
func (p *player) wait(ctx context.Context, deadline time.Time) bool {
	p.timer.Reset(time.Until(deadline))
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return false
	case <-p.timer.C:
		p.now = time.Now()
		return true
	}
}
