package main

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/ringfire/ringfire/archive"
	benarch "github.com/ringfire/ringfire/internal/bench/archive"
)

// archiveFlags are the archive section's sizes.
type archiveFlags struct {
	rates, diskRates, diskRecords, syncs string
	step                                 time.Duration
	dir                                  string
	ddMiB, replay, seek, seeks, compress int

	catchup, catchupFill, catchupRate int
	catchupFor                        time.Duration
	catchupTransport                  string
}

func (a *archiveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.rates, "archive-rates", joinInts(benarch.DefaultRates), "archive: offered `rates` of the tmpfs recording sweep, records/s")
	fs.StringVar(&a.diskRates, "archive-disk-rates", joinInts(benarch.DefaultDiskRates), "archive: offered `rates` of the disk recording sweeps, MB/s of payload")
	fs.StringVar(&a.diskRecords, "archive-disk-records", joinInts(benarch.DefaultDiskRecords), "archive: record `sizes` of the disk recording sweeps, bytes")
	fs.StringVar(&a.syncs, "archive-syncs", strings.Join(benarch.DefaultSyncs, ","), "archive: the recorder's sync `modes` on the disk (none, interval=D, segment)")
	fs.DurationVar(&a.step, "archive-step", time.Second, "archive: `duration` of each rate of a recording sweep")
	fs.StringVar(&a.dir, "archive-dir", "/var/tmp", "archive: a `directory` on the disk (not tmpfs) for its archives and dd's file")
	fs.IntVar(&a.ddMiB, "archive-dd-mib", 1024, "archive: `MiB` dd writes to measure the disk")
	fs.IntVar(&a.replay, "archive-replay", 8<<20, "archive: `records` replayed")
	fs.IntVar(&a.seek, "archive-seek", 100_000_000, "archive: `records` of the archive seeks are timed in (fewer, noted, if the disk lacks room)")
	fs.IntVar(&a.seeks, "archive-seeks", 2000, "archive: seeks timed per kind (sequence, time) and page cache (warm, cold)")
	fs.IntVar(&a.compress, "archive-compress", 2<<20, "archive: `records` of each feed written plain and compressed")
	fs.IntVar(&a.catchup, "archive-catchup-records", 10_000_000, "archive: `records` a mirror catches up from the archive "+
		"(serve --archive, the repair budget off) before it goes live")
	fs.IntVar(&a.catchupFill, "archive-catchup-fill", 2_000_000, "archive: the producer's `rate` while the catch-up's records are archived, records/s (the recorder must keep up)")
	fs.IntVar(&a.catchupRate, "archive-catchup-rate", 1_000_000, "archive: the live `rate` after the catch-up, records/s")
	fs.DurationVar(&a.catchupFor, "archive-catchup-live", 3*time.Second, "archive: `duration` of the live load after the catch-up")
	fs.StringVar(&a.catchupTransport, "archive-catchup-transport", benarch.CatchupTransports[0],
		"archive: the catch-up's live `path`: "+strings.Join(benarch.CatchupTransports, " or ")+" (the catch-up itself is TCP)")
}

func (a *archiveFlags) config() (benarch.Config, error) {
	c := benarch.Config{Step: a.step, DiskDir: a.dir, DDMiB: a.ddMiB, Replay: a.replay, Seek: a.seek, Seeks: a.seeks, Compress: a.compress,
		Catchup: a.catchup, CatchupFill: a.catchupFill, CatchupRate: a.catchupRate, CatchupFor: a.catchupFor, CatchupTransport: a.catchupTransport}
	var err error
	if c.Rates, err = parseInts("--archive-rates", a.rates); err != nil {
		return c, err
	}
	if c.DiskRates, err = parseInts("--archive-disk-rates", a.diskRates); err != nil {
		return c, err
	}
	if c.DiskRecords, err = parseInts("--archive-disk-records", a.diskRecords); err != nil {
		return c, err
	}
	for _, n := range c.DiskRecords {
		if n < 32 || n > 1<<20 {
			return c, usagef("--archive-disk-records %q: want sizes of 32 bytes to 1 MiB", a.diskRecords)
		}
	}
	for _, s := range strings.Split(a.syncs, ",") {
		if _, _, err := archive.ParseSync(s); err != nil {
			return c, usagef("--archive-syncs %q: %v", a.syncs, err)
		}
		c.Syncs = append(c.Syncs, s)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"--archive-dd-mib", a.ddMiB}, {"--archive-replay", a.replay}, {"--archive-seek", a.seek}, {"--archive-seeks", a.seeks}, {"--archive-compress", a.compress},
		{"--archive-catchup-records", a.catchup}, {"--archive-catchup-fill", a.catchupFill}, {"--archive-catchup-rate", a.catchupRate}} {
		if v.n <= 0 {
			return c, usagef("%s %d: must be positive", v.name, v.n)
		}
	}
	switch {
	case a.step <= 0:
		return c, usagef("--archive-step %v: must be positive", a.step)
	case a.dir == "":
		return c, usagef("--archive-dir: empty")
	case a.seek < 1000:
		return c, usagef("--archive-seek %d: at least 1000 records", a.seek)
	case a.catchupFor <= 0:
		return c, usagef("--archive-catchup-live %v: must be positive", a.catchupFor)
	case !slices.Contains(benarch.CatchupTransports, a.catchupTransport):
		return c, usagef("--archive-catchup-transport %q: want %s", a.catchupTransport, strings.Join(benarch.CatchupTransports, " or "))
	}
	return c, nil
}
