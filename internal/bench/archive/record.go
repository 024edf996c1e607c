package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// The recording sweeps: a producer process pushes into a ring at each
// offered rate for Config.Step, a recorder process (archive.Recorder)
// follows the ring into an archive; the producer is pinned to CPU 0, the
// recorder to CPU 1. A rate is kept up with when the recorder wrote every
// record pushed, no gap entry, within drainWait after the producer's
// last. The sweep stops at the second rate in a row that was not.

// drainWait bounds how long the recorder may take, once the producer
// stopped, to have written everything.
const drainWait = 2 * time.Second

// syncWait bounds the syncfs that follows a disk step.
const syncWait = time.Minute

// ringBytes is the size of the producer's ring: 64 MiB of records, as
// the stress section's 2^20 records of 64 bytes.
const ringBytes = 64 << 20

// capacity is the ring's capacity for records of size bytes: a power of
// two, ringBytes of records at most 2^20.
func capacity(size int) uint64 {
	c := uint64(1 << 20)
	for c > 1 && c*uint64(size) > ringBytes {
		c >>= 1
	}
	return c
}

// RecordTmpfs is the sweep of 64-byte records recorded into tmpfs.
func (b *Bench) RecordTmpfs() (report.ArchiveRecord, error) {
	return b.sweep("tmpfs", b.shm, "none", Record, b.cfg.Rates)
}

// RecordDisk is the sweep of records of size bytes recorded onto the disk
// with sync mode sync; the rates are Config.DiskRates in MB/s of payload.
// Each step ends with a syncfs, timed apart.
func (b *Bench) RecordDisk(sync string, size int) (report.ArchiveRecord, error) {
	if err := b.diskReady(uint64(len(b.cfg.DiskRates)) << 20); err != nil {
		return report.ArchiveRecord{Medium: "disk", Sync: sync, Record: size}, err
	}
	var rates []int
	for _, mb := range b.cfg.DiskRates {
		rates = append(rates, max(mb*1_000_000/size, 1))
	}
	return b.sweep("disk", b.cfg.DiskDir, sync, size, rates)
}

func (b *Bench) sweep(medium, dir, sync string, size int, rates []int) (report.ArchiveRecord, error) {
	x := report.ArchiveRecord{Medium: medium, Dir: describe(dir), Sync: sync, Record: size, Capacity: capacity(size)}
	failed := 0
	for i, rate := range rates {
		s, err := b.step(dir, sync, size, x.Capacity, rate, medium == "disk")
		if err != nil {
			return x, fmt.Errorf("%d records/s: %w", rate, err)
		}
		x.Sweep = append(x.Sweep, s)
		if s.ZeroGap() {
			x.Best, x.Capped, failed = s, i == len(rates)-1, 0
		} else if failed++; failed == 2 {
			break
		}
	}
	return x, nil
}

// step is one rate of a sweep, in a fresh archive under dir (removed).
func (b *Bench) step(dir, sync string, size int, capacity uint64, rate int, syncfs bool) (report.ArchiveStep, error) {
	st := report.ArchiveStep{Rate: rate}
	work, err := os.MkdirTemp(dir, "ringfire-bench-archive-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(work)
	ring := filepath.Join(b.shm, "archive-ring")
	defer os.Remove(ring)
	var ps procs
	defer ps.stop()
	prod, err := ps.start(b, "producer", role.Spec{Role: role.ArchProducer, Ring: ring, Record: size, Capacity: capacity,
		Rate: rate, Limit: report.Duration(b.cfg.Step)}, 0)
	if err != nil {
		return st, err
	}
	rec, err := ps.start(b, "recorder", role.Spec{Role: role.ArchRecorder, Read: ring, Dir: filepath.Join(work, "archive"),
		Sync: sync, SyncFS: syncfs, Limit: report.Duration(drainWait)}, 1)
	if err != nil {
		return st, err
	}
	before, err := ps.cpuTimes()
	if err != nil {
		return st, err
	}
	start := time.Now()
	if err := prod.Send(role.CmdGo); err != nil {
		return st, err
	}
	var pr role.ProducerResult
	if err := result(prod, b.cfg.Step+readyWait, &pr); err != nil {
		return st, err
	}
	if err := rec.Send(role.CmdWait + strconv.FormatUint(pr.Last, 10)); err != nil {
		return st, err
	}
	var rr role.RecorderResult
	if err := result(rec, drainWait+syncWait, &rr); err != nil {
		return st, err
	}
	wall := time.Since(start)
	after, err := ps.cpuTimes()
	if err != nil {
		return st, err
	}
	st.Pushed, st.Records, st.Gaps, st.GapRecords, st.Bytes, st.Written = pr.Pushed, rr.Records, rr.Gaps, rr.GapRecords, rr.Bytes, rr.Written
	elapsed := wall - time.Duration(rr.SyncNs)
	st.Elapsed = report.Duration(elapsed)
	if syncfs {
		st.Synced = report.Duration(wall)
	}
	st.Achieved = float64(pr.Pushed) / elapsed.Seconds()
	st.CPU = ps.cpuOver(before, after, wall)
	return st, nil
}
