package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// The catch-up: a producer process writes Config.Catchup records
// (sequenced: each ringfire gen's record of its own sequence) into a ring
// of 2^20 slots (catchupCapacity) at Config.CatchupFill while a recorder
// process archives them (no gap entry, checked); ringfire serve RING
// --archive DIR (namespace A, the repair budget off) and ringfire mirror
// --from 1 (namespace B, across the veth) then start, and the catch-up is
// timed from the mirror's start until its ring holds the last record.
// Then the producer pushes Config.CatchupRate for Config.CatchupFor, the
// recorder following, and the mirror must end holding every record once:
// its final counters (mirror --json) and its last records compared with
// the source ring's.

// ErrCatchup: the mirror did not end holding every record once, or the
// archive had a gap.
var ErrCatchup = errors.New("archive: catch-up")

// catchupFloor is the slowest catch-up waited for, records/s; liveWait
// bounds the mirror's drain after the live load.
const (
	catchupFloor = 50_000
	liveWait     = 30 * time.Second
)

// catchupCapacity is the ring's capacity for a catch-up of n records:
// 2^20 slots, fewer for a small n, so that the ring holds at most a
// quarter of them and the rest must come from the archive.
func catchupCapacity(n uint64) uint64 {
	c := capacity(Record)
	for c > 1024 && c > n/4 {
		c >>= 1
	}
	return c
}

// Catchup measures a mirror catching up from the archive, then live.
func (b *Bench) Catchup() (report.ArchiveCatchup, error) {
	c := &b.cfg
	n := uint64(c.Catchup)
	live := uint64(c.CatchupFor.Seconds() * float64(c.CatchupRate))
	dir := c.DiskDir
	if err := b.diskReady((n + live) * (Record + 32)); err != nil {
		b.note("catch-up archive in tmpfs: %v", err)
		dir = b.shm
	}
	x := report.ArchiveCatchup{Dir: describe(dir), Transport: c.CatchupTransport, Capacity: catchupCapacity(n), Record: Record,
		Records: n, FillRate: c.CatchupFill}
	x.Live.Rate = c.CatchupRate
	if slack := int(x.Capacity) * 10; x.FillRate > slack { // the ring holds 100 ms of the fill
		b.note("catch-up: the fill at %d records/s, not %d: a ring of %d slots holds 100 ms of it", slack, x.FillRate, x.Capacity)
		x.FillRate = slack
	}
	if err := b.network(); err != nil {
		return x, err
	}
	work, err := os.MkdirTemp(dir, "ringfire-bench-catchup-")
	if err != nil {
		return x, err
	}
	defer os.RemoveAll(work)
	ring, mirrorRing := filepath.Join(b.shm, "catchup-ring"), filepath.Join(b.shm, "catchup-mirror")
	defer os.Remove(ring)
	defer os.Remove(mirrorRing)
	var ps procs
	defer ps.stop()
	prod, err := ps.start(b, "producer", role.Spec{Role: role.ArchProducer, Ring: ring, Record: Record, Capacity: x.Capacity}, 0)
	if err != nil {
		return x, err
	}
	rec, err := ps.start(b, "recorder", role.Spec{Role: role.ArchRecorder, Read: ring, Dir: filepath.Join(work, "archive"),
		Sync: "none", Limit: report.Duration(drainWait)}, 1)
	if err != nil {
		return x, err
	}
	pr, rr, err := pushRecorded(prod, rec, x.FillRate, 0, n)
	if err != nil {
		return x, err
	}
	if x.RecorderGaps = rr.Gaps; !rr.Written || rr.Gaps != 0 || rr.Records != n || pr.Last != n {
		return x, fmt.Errorf("%w: the recorder did not keep up at %d records/s: %d of %d records, %d gap entries (lower --archive-catchup-fill)",
			ErrCatchup, x.FillRate, rr.Records, n, rr.Gaps)
	}
	if _, err := b.startServe(&ps, ring, filepath.Join(work, "archive")); err != nil {
		return x, err
	}
	mirror, err := b.catchUp(&ps, &x, mirrorRing)
	if err != nil {
		return x, err
	}
	return x, b.goLive(ps, &x, prod, rec, mirror, ring, mirrorRing)
}

// pushRecorded has the producer push at rate for d or count records and
// waits for the recorder to have written the last.
func pushRecorded(prod, rec *proc.Proc, rate int, d time.Duration, count uint64) (role.ProducerResult, role.RecorderResult, error) {
	var pr role.ProducerResult
	var rr role.RecorderResult
	if err := prod.Send(fmt.Sprintf("%s%d %d %d", role.CmdPush, rate, int64(d), count)); err != nil {
		return pr, rr, err
	}
	bound := d + time.Duration(float64(count)/float64(rate)*float64(time.Second))
	if err := result(prod, bound+readyWait, &pr); err != nil {
		return pr, rr, err
	}
	if err := rec.Send(role.CmdWait + strconv.FormatUint(pr.Last, 10)); err != nil {
		return pr, rr, err
	}
	err := result(rec, drainWait+readyWait, &rr)
	return pr, rr, err
}

// catchUp starts the mirror and times it until its ring holds x.Records,
// with every process's CPU over that time.
func (b *Bench) catchUp(ps *procs, x *report.ArchiveCatchup, mirrorRing string) (*proc.Proc, error) {
	before, err := ps.cpuTimes()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	m, err := ps.startRingfire(b.lb, "mirror", b.mirrorArgs(mirrorRing))
	if err != nil {
		return nil, err
	}
	before = append(before, 0) // the mirror's CPU from its start
	bound := readyWait + time.Duration(x.Records/catchupFloor)*time.Second
	if err := b.awaitRing(m, mirrorRing, x.Records, bound); err != nil {
		return nil, fmt.Errorf("%w: mirror: %w", ErrCatchup, err)
	}
	x.Elapsed = report.Duration(time.Since(start))
	after, err := ps.cpuTimes()
	if err != nil {
		return nil, err
	}
	x.CPU = ps.cpuOver(before, after, time.Duration(x.Elapsed))
	return m, nil
}

// goLive pushes the live load, waits for the recorder and the mirror to
// hold its last record, compares the rings and reads the mirror's
// counters.
func (b *Bench) goLive(ps procs, x *report.ArchiveCatchup, prod, rec, mirror *proc.Proc, ring, mirrorRing string) error {
	c, l := &b.cfg, &x.Live
	before, err := ps.cpuTimes()
	if err != nil {
		return err
	}
	start := time.Now()
	pr, rr, err := pushRecorded(prod, rec, c.CatchupRate, c.CatchupFor, 0)
	if err != nil {
		return err
	}
	l.Pushed, l.Last, x.RecorderGaps = pr.Pushed, pr.Last, rr.Gaps
	if err := b.awaitRing(mirror, mirrorRing, l.Last, liveWait); err != nil {
		return fmt.Errorf("%w: live: %w", ErrCatchup, err)
	}
	l.Elapsed = report.Duration(time.Since(start))
	after, err := ps.cpuTimes()
	if err != nil {
		return err
	}
	l.CPU = ps.cpuOver(before, after, time.Duration(l.Elapsed))
	if l.Compared, err = compareRings(ring, mirrorRing, l.Last, x.Capacity); err != nil {
		return fmt.Errorf("%w: %w", ErrCatchup, err)
	}
	l.Identical = true
	st, err := mirrorStats(mirror)
	if err != nil {
		return err
	}
	l.Written, l.Next, l.History, l.Gaps, l.Duplicates, l.Stale = st.Records, st.Next, st.CatchUp, st.Gaps, st.Duplicates, st.Stale
	if !st.History {
		return fmt.Errorf("%w: the source did not offer the mirror its history (serve --archive)", ErrCatchup)
	}
	if !x.Complete() {
		return fmt.Errorf("%w: the mirror wrote %d records to next %d for %d pushed, %d gap records; the archive %d gap entries",
			ErrCatchup, l.Written, l.Next, l.Last, l.Gaps, x.RecorderGaps)
	}
	return nil
}

// awaitRing polls (every millisecond, at most bound) until the ring at
// path (made by p) holds sequence last.
func (b *Bench) awaitRing(p *proc.Proc, path string, last uint64, bound time.Duration) error {
	var r *shm.Ring
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	var dead error
	err := pace.Until(bound, fmt.Sprintf("%s to hold sequence %d", path, last), func() bool {
		if dead = p.Alive(); dead != nil {
			return true
		}
		if r == nil {
			if r, _ = shm.Open(path, shm.OpenOptions{}); r == nil {
				return false
			}
		}
		return r.WriteSeq() >= last
	})
	if dead != nil {
		return dead
	}
	if err != nil {
		if r != nil {
			return fmt.Errorf("%w (it holds %d)", err, r.WriteSeq())
		}
		return err
	}
	return nil
}

// compareRings compares the last records (at most capacity, to last) of
// the source and the mirror ring byte by byte, each checked to be its
// sequence's record, and returns how many it compared.
func compareRings(src, dst string, last, capacity uint64) (uint64, error) {
	a, err := shm.Open(src, shm.OpenOptions{})
	if err != nil {
		return 0, err
	}
	defer a.Close()
	m, err := shm.Open(dst, shm.OpenOptions{})
	if err != nil {
		return 0, err
	}
	defer m.Close()
	first := last - min(last, capacity) + 1
	ra, rm := make([]byte, Record), make([]byte, Record)
	for seq := first; seq <= last; seq++ {
		sa, err1 := a.ReadSlot(seq, ra)
		sm, err2 := m.ReadSlot(seq, rm)
		if err := errors.Join(err1, err2); err != nil {
			return seq - first, err
		}
		if sa != shm.SlotReady || sm != shm.SlotReady {
			return seq - first, fmt.Errorf("sequence %d: source %s, mirror %s", seq, sa, sm)
		}
		if got, _, err := synth.Check(rm); err != nil || got != seq || !bytes.Equal(ra, rm) {
			return seq - first, fmt.Errorf("sequence %d: the mirror's record differs from the source's (holds %d: %v)", seq, got, err)
		}
	}
	return last - first + 1, nil
}

// mirrorStats ends the mirror (SIGTERM) and reads the counters it prints
// as JSON (--json) when it ends.
func mirrorStats(m *proc.Proc) (replica.MirrorStats, error) {
	var st replica.MirrorStats
	if !m.Terminate() {
		return st, fmt.Errorf("archive: mirror did not end within its bound after SIGTERM")
	}
	out := m.Output()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &st) == nil {
			return st, nil
		}
	}
	return st, fmt.Errorf("archive: mirror printed no counters: %s", proc.LastLines(out, 5))
}
