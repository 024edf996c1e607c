package archive

import (
	"os"
	"path/filepath"
	"time"

	rfa "github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// Replay measures archive.Replay at speed 0 into a ring, in a replayer
// process of its own pinned to CPU 1: an archive of Config.Replay records
// of the synthetic feed, written by this process on the disk (or in
// tmpfs when the disk cannot take it), replayed once to warm the page
// cache and make the ring, then once timed.
func (b *Bench) Replay() (report.ArchiveReplay, error) {
	dir := b.cfg.DiskDir
	if err := b.diskReady(uint64(b.cfg.Replay) * (Record + 32)); err != nil {
		b.note("replay from tmpfs: %v", err)
		dir = b.shm
	}
	x := report.ArchiveReplay{Dir: describe(dir)}
	work, err := os.MkdirTemp(dir, "ringfire-bench-replay-")
	if err != nil {
		return x, err
	}
	defer os.RemoveAll(work)
	arch := filepath.Join(work, "archive")
	st, err := build(arch, b.cfg.Replay, synthFeed{}, rfa.Options{}, nil)
	if err != nil {
		return x, err
	}
	x.Bytes = st.Bytes
	ring := filepath.Join(b.shm, "archive-replay")
	defer os.Remove(ring)
	var ps procs
	defer ps.stop()
	p, err := ps.start(b, "replayer", role.Spec{Role: role.ArchReplayer, Dir: arch, Ring: ring}, 1)
	if err != nil {
		return x, err
	}
	before, err := ps.cpuTimes()
	if err != nil {
		return x, err
	}
	start := time.Now()
	if err := p.Send(role.CmdGo); err != nil {
		return x, err
	}
	var rr role.ReplayerResult
	if err := result(p, readyWait, &rr); err != nil {
		return x, err
	}
	wall := time.Since(start)
	after, err := ps.cpuTimes()
	if err != nil {
		return x, err
	}
	x.Records, x.Elapsed = rr.Records, report.Duration(rr.Ns)
	x.CPU = ps.cpuOver(before, after, wall)
	return x, nil
}
