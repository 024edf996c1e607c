package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/archive"
)

// recordUnit is one recorder: record runs one, ringfire run one per
// [[record]] table. Its run opens the archive's writer (its lock: a
// restarted unit opens it again once the old one closed it) and records
// until ctx ends or a write fails.
type recordUnit struct {
	name, ring, dir string
	from            string
	opts            archive.Options
	cfg             archive.RecorderConfig
	log             *slog.Logger
	// live is the recorder running now (nil before the archive opens);
	// it stays after run returns, for the final counters.
	live atomic.Pointer[archive.Recorder]
	// failures counts the runs that ended on an error (the archive could
	// not be opened or written): record's metric (ringfire run's is its
	// supervisor's count, which outlives each unit built).
	failures *atomic.Uint64
}

// unit validates the flags and returns the unit recording ring into dir.
func (f *recordFlags) unit(ring, dir string, log *slog.Logger) (*recordUnit, error) {
	opts, cfg, err := f.check(ring)
	if err != nil {
		return nil, err
	}
	return &recordUnit{name: ringName(ring), ring: ring, dir: dir, from: f.from, opts: opts, cfg: cfg, log: log, failures: new(atomic.Uint64)}, nil
}

// recordWatch is how often run looks at the recorder's counters to log a
// new epoch; gaps are summed up at most once per logEvery.
const recordWatch = 100 * time.Millisecond

// run records until ctx ends (nil) or the archive cannot be written: an
// error naming DIR, after one line logged with it. started, when set, is
// called once the archive is open.
func (u *recordUnit) run(ctx context.Context, started func()) error {
	err := u.record(ctx, started)
	if err != nil {
		u.failures.Add(1)
	}
	return err
}

func (u *recordUnit) record(ctx context.Context, started func()) error {
	w, err := archive.OpenWriter(u.dir, u.opts)
	if err != nil {
		u.log.Error("cannot open the archive", "dir", u.dir, "err", err)
		return fmt.Errorf("archive %s: %w", u.dir, err)
	}
	if torn := w.Stats().TornBytes; torn > 0 {
		u.log.Warn("cut the torn tail a crash left", "dir", u.dir, "bytes", torn)
	}
	r, err := archive.NewRecorder(w, u.cfg)
	if err != nil {
		w.Close()
		return fmt.Errorf("archive %s: %w", u.dir, err)
	}
	u.live.Store(r)
	if started != nil {
		started()
	}
	u.log.Info("recording", "ring", u.ring, "dir", u.dir, "from", u.from, "sync", syncText(u.opts),
		"segment_size", u.opts.SegmentSize, "compress", u.opts.Compress, "max_bytes", u.opts.MaxBytes, "max_age", u.opts.MaxAge)
	wctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	var seen recordLogged
	go func() { defer close(watched); u.watch(wctx, r, &seen) }()
	err = r.Run(ctx)
	stop()
	<-watched
	u.logProgress(r.Stats(), &seen, true)
	cerr := w.Close()
	switch {
	case errors.Is(err, syscall.ENOSPC):
		u.log.Error("recording stopped: the archive's filesystem is full (free space, or lower --max-bytes, then record --from resume)",
			"dir", u.dir, "err", err)
		return fmt.Errorf("record into %s: its filesystem is full: %w", u.dir, err)
	case err != nil:
		u.log.Error("recording stopped: the archive cannot be written", "dir", u.dir, "err", err)
		return fmt.Errorf("record into %s: %w", u.dir, err)
	case cerr != nil:
		u.log.Error("closing the archive", "dir", u.dir, "err", cerr)
		return fmt.Errorf("record into %s: %w", u.dir, cerr)
	}
	st := r.Stats()
	u.log.Info("stopped recording", "ring", u.ring, "dir", u.dir, "epoch", st.Epoch, "next", st.Next,
		"records", st.Records, "gaps", st.Gaps, "gap_records", st.GapRecords, "bytes", st.Writer.Bytes)
	return nil
}

// syncText is Options.Sync as --sync says it.
func syncText(o archive.Options) string {
	if o.Sync == archive.SyncInterval {
		return "interval=" + o.SyncEvery.String()
	}
	return o.Sync.String()
}

// recordLogged is what watch logged last.
type recordLogged struct {
	epochs, gaps, gapRecords uint64
	at                       time.Time
}

// watch logs each new epoch as the recorder begins it, and the gaps it
// wrote, summed up at most once per logEvery, until ctx ends.
func (u *recordUnit) watch(ctx context.Context, r *archive.Recorder, seen *recordLogged) {
	t := time.NewTicker(recordWatch)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			u.logProgress(r.Stats(), seen, false)
		}
	}
}

// logProgress logs what changed since seen: the epochs begun (a new
// archive, a producer restart, a ring cut), and gaps (at most once per
// logEvery, and once more at the end).
func (u *recordUnit) logProgress(st archive.RecorderStats, seen *recordLogged, final bool) {
	if st.Epochs != seen.epochs {
		u.log.Info("new epoch", "ring", u.ring, "dir", u.dir, "epoch", st.Epoch, "epochs_begun", st.Epochs,
			"replaced_rings", st.Replaced, "cut_rings", st.Cuts)
		seen.epochs = st.Epochs
	}
	if st.Gaps == seen.gaps || !final && time.Since(seen.at) < logEvery {
		return
	}
	u.log.Warn("the recorder fell more than the ring behind: gaps written", "ring", u.ring, "dir", u.dir,
		"gaps", st.Gaps-seen.gaps, "gap_records", st.GapRecords-seen.gapRecords, "total_gaps", st.Gaps, "total_gap_records", st.GapRecords)
	seen.gaps, seen.gapRecords, seen.at = st.Gaps, st.GapRecords, time.Now()
}

// stats is the recorder's counters (zero before the archive opened).
func (u *recordUnit) stats() archive.RecorderStats {
	if r := u.live.Load(); r != nil {
		return r.Stats()
	}
	return archive.RecorderStats{Ring: u.ring}
}

// ready is nil once the unit opened its archive.
func (u *recordUnit) ready() error {
	if u.live.Load() == nil {
		return errors.New("archive " + u.dir + " not open yet")
	}
	return nil
}

// supervisedRecord is a record unit as ringfire run's supervisor runs
// it: up once its archive is open; a write error (a full disk) fails it
// alone, and the supervisor retries after its back-off.
type supervisedRecord struct{ u *recordUnit }

func (s supervisedRecord) Run(ctx context.Context, up func()) error { return s.u.run(ctx, up) }

func (s supervisedRecord) Ready() error { return s.u.ready() }

// Discard has nothing to release: a record unit opens its archive in Run.
func (s supervisedRecord) Discard() {}
