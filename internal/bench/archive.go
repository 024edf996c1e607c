package bench

import (
	"fmt"

	"github.com/ringfire/ringfire/internal/bench/archive"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// planArchive lists the archive section's measurements: recording into
// tmpfs, the disk's own bandwidth, recording onto the disk in each sync
// mode and record size, replay, seek, compression, and a mirror catching
// up from the archive then going live. Each fills its
// part of rep.Archive; the section's notes go to rep.Notes at its end.
func planArchive(cfg *Config, rep *report.Report) []step {
	ac := cfg.Archive
	ac.Defaults()
	rep.Archive = &report.Archive{}
	x := rep.Archive
	on := func(name string, run func(b *archive.Bench) error) step {
		return step{"archive " + name, func(r *rig) error {
			b, err := r.archive(cfg)
			if err != nil {
				return err
			}
			return run(b)
		}}
	}
	steps := []step{on("tmpfs bandwidth (dd)", func(b *archive.Bench) error {
		d, err := b.TmpfsDD()
		x.Tmpfs = &d
		return err
	}), on("record tmpfs", func(b *archive.Bench) error {
		rec, err := b.RecordTmpfs()
		x.Record = append(x.Record, rec)
		return err
	}), on("disk bandwidth (dd)", func(b *archive.Bench) error {
		d, err := b.DD()
		x.Disk = &d
		return err
	})}
	for _, size := range ac.DiskRecords {
		for _, sync := range ac.Syncs {
			steps = append(steps, on(fmt.Sprintf("record disk, %d-byte records, sync %s", size, sync), func(b *archive.Bench) error {
				rec, err := b.RecordDisk(sync, size)
				x.Record = append(x.Record, rec)
				return err
			}))
		}
	}
	return append(steps, on("replay", func(b *archive.Bench) error {
		p, err := b.Replay()
		x.Replay = &p
		return err
	}), on("seek", func(b *archive.Bench) error {
		s, err := b.Seek()
		x.Seek = &s
		return err
	}), on("compression", func(b *archive.Bench) error {
		c, err := b.Compress()
		x.Compress = c
		return err
	}), on(fmt.Sprintf("catch-up of %d records from the archive, then live over %s", ac.Catchup, ac.CatchupTransport),
		func(b *archive.Bench) error {
			c, err := b.Catchup()
			x.Catchup = &c
			rep.Notes = append(rep.Notes, b.Notes()...)
			return err
		}))
}

// archive is the run's archive section (made at its first step).
func (r *rig) archive(cfg *Config) (*archive.Bench, error) {
	if r.arch == nil {
		ac := cfg.Archive
		if ac.Ringfire == "" {
			ac.Ringfire = cfg.Ringfire
		}
		b, err := archive.New(r.pair, r.dir, ac)
		if err != nil {
			return nil, err
		}
		r.arch = b
	}
	return r.arch, nil
}
