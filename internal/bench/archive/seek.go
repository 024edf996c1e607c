package archive

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	rfa "github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
	"golang.org/x/sys/unix"
)

// entryBytes is what a 64-byte record takes in an archive (its framing).
const entryBytes = Record + 32

// Seek builds an archive of Config.Seek records of the synthetic feed on
// the disk (default 64 MiB segments, no sync), syncs it, and times
// Config.Seeks seeks and first Nexts to random sequences, then as many to
// random times: first warm (right after it was written, the page cache
// holding what the kernel kept, and a Reader that read every segment's
// index first, untimed: Epochs), then cold (every file of the archive
// dropped from the page cache, posix_fadvise DONTNEED, and a fresh Reader
// before each kind: its first seek into a segment reads the segment's
// index, into the unsealed last one scans it). The archive is removed at the end. Without
// room for it on the disk, fewer records, noted.
func (b *Bench) Seek() (report.ArchiveSeek, error) {
	n := uint64(b.cfg.Seek)
	if _, free, err := fsType(b.cfg.DiskDir); err == nil && free < n*entryBytes+n*entryBytes/50+2<<30 {
		scaled := (free - min(free, 2<<30)) * 50 / 51 / entryBytes
		b.note("seek: %s has %d MiB free, too little for %d records: %d records instead", b.cfg.DiskDir, free>>20, n, scaled)
		n = scaled
	}
	x := report.ArchiveSeek{Dir: describe(b.cfg.DiskDir), Records: n}
	if err := b.diskReady(n * entryBytes); err != nil || n < 1000 {
		return x, fmt.Errorf("seek: %d records: %v", n, err)
	}
	work, err := os.MkdirTemp(b.cfg.DiskDir, "ringfire-bench-seek-")
	if err != nil {
		return x, err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "archive")
	start := time.Now()
	st, err := build(dir, int(n), synthFeed{}, rfa.Options{}, nil)
	if err != nil {
		return x, err
	}
	if _, err := syncFiles(dir, false); err != nil {
		return x, err
	}
	x.Build, x.Bytes = report.Duration(time.Since(start)), st.Bytes
	rng := rand.New(rand.NewPCG(39, 2))
	for _, cache := range []string{"warm", "cold"} {
		for _, by := range []string{"sequence", "time"} {
			if cache == "cold" {
				if x.Segments, err = syncFiles(dir, true); err != nil {
					return x, err
				}
			}
			p, err := b.seeks(dir, n, by, cache == "warm", rng)
			if err != nil {
				return x, fmt.Errorf("seek by %s, %s: %w", by, cache, err)
			}
			x.Lat = append(x.Lat, report.SeekLatency{By: by, Cache: cache, Lat: p})
		}
	}
	return x, nil
}

// seeks times Config.Seeks seeks (by sequence or time) and first Nexts
// in the archive in dir (n records of synthFeed) with a fresh Reader
// (warm: which read every index first), checking that each lands where
// asked.
func (b *Bench) seeks(dir string, n uint64, by string, warm bool, rng *rand.Rand) (report.Percentiles, error) {
	r, err := rfa.Open(dir)
	if err != nil {
		return report.Percentiles{}, err
	}
	defer r.Close()
	if warm {
		if _, err := r.Epochs(); err != nil {
			return report.Percentiles{}, err
		}
	}
	h := hist.New()
	for range b.cfg.Seeks {
		seq := 1 + rng.Uint64N(n)
		t := feedStart + int64(seq)*1000
		start := time.Now()
		var c *rfa.Cursor
		if by == "time" {
			c, err = r.SeekTime(1, t)
		} else {
			c, err = r.Seek(1, seq)
		}
		if err != nil {
			return report.Percentiles{}, err
		}
		e, err := c.Next()
		d := time.Since(start)
		c.Close()
		if err != nil || e.Seq != seq || e.Time != t {
			return report.Percentiles{}, fmt.Errorf("seek to %d (time %d): entry %d at %d, %v", seq, t, e.Seq, e.Time, err)
		}
		h.Record(d)
	}
	return h.Percentiles(), nil
}

// syncFiles syncs every file of dir and, when drop is set, drops each
// from the page cache; it returns how many segments (data files) there
// are.
func syncFiles(dir string, drop bool) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	segs := 0
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".rfa" {
			segs++
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, err
		}
		err = unix.Fdatasync(int(f.Fd()))
		if err == nil && drop {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("archive: %s: %w", e.Name(), err)
		}
	}
	return segs, nil
}
