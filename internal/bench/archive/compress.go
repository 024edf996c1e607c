package archive

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	rfa "github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// compressSegment is the segment size of the compression measurement:
// small enough that Config.Compress records seal a dozen segments.
const compressSegment = 16 << 20

// Compress writes Config.Compress records of each feed into tmpfs twice,
// plain and compressed (zstd blocks, archive.Options.Compress), in 16 MiB
// segments: the sealed segments' sizes, the time the appends that sealed
// them took (the buffer's last write, the index, and the compression),
// and a cursor's read of every sealed record, each archive read by a
// fresh Reader from a warm page cache.
func (b *Bench) Compress() ([]report.ArchiveCompress, error) {
	var out []report.ArchiveCompress
	for _, mk := range []func() feed{func() feed { return synthFeed{} }, func() feed { return newMarketFeed() }} {
		c, err := b.compressFeed(mk)
		if err != nil {
			return out, fmt.Errorf("%s: %w", mk().name(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

func (b *Bench) compressFeed(mk func() feed) (report.ArchiveCompress, error) {
	c := report.ArchiveCompress{Feed: mk().name()}
	work, err := os.MkdirTemp(b.shm, "archive-compress-")
	if err != nil {
		return c, err
	}
	defer os.RemoveAll(work)
	plain, zst := filepath.Join(work, "plain"), filepath.Join(work, "zstd")
	var sealPlain, sealZstd int64
	opts := rfa.Options{SegmentSize: compressSegment}
	if _, err := build(plain, b.cfg.Compress, mk(), opts, func(d int64) { sealPlain += d }); err != nil {
		return c, err
	}
	opts.Compress = true
	if _, err := build(zst, b.cfg.Compress, mk(), opts, func(d int64) { sealZstd += d }); err != nil {
		return c, err
	}
	p, err := sealedOf(plain)
	if err != nil {
		return c, err
	}
	z, err := sealedOf(zst)
	if err != nil {
		return c, err
	}
	if p.records == 0 || p.records != z.records || p.data != z.data {
		return c, fmt.Errorf("archive: sealed %d records (%d bytes) plain, %d (%d) compressed", p.records, p.data, z.records, z.data)
	}
	c.Records, c.Payload, c.Plain, c.Compressed = p.records, p.records*Record, p.data, z.disk
	c.SealPlain, c.SealZstd = report.Duration(sealPlain), report.Duration(sealZstd)
	if c.ReadPlain, err = readTo(plain, p.last); err != nil {
		return c, err
	}
	if c.ReadZstd, err = readTo(zst, p.last); err != nil {
		return c, err
	}
	return c, nil
}

// appendTimed appends a record and, when sealed is set, calls it with
// the append's duration (ns) if it sealed a segment.
func appendTimed(w *rfa.Writer, seq uint64, t int64, rec []byte, sealed func(d int64)) error {
	if sealed == nil {
		return w.Append(seq, t, rec)
	}
	before := w.Stats().Sealed
	start := time.Now()
	err := w.Append(seq, t, rec)
	if d := time.Since(start); w.Stats().Sealed != before {
		sealed(int64(d))
	}
	return err
}

// sealedSum is an archive's sealed segments, together.
type sealedSum struct {
	records, data, disk, last uint64
	segments                  int
}

func sealedOf(dir string) (sealedSum, error) {
	var s sealedSum
	r, err := rfa.Open(dir)
	if err != nil {
		return s, err
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil {
		return s, err
	}
	for _, ep := range eps {
		for _, g := range ep.Segments {
			s.segments++
			if g.Sealed {
				s.records += g.Records
				s.data += uint64(g.DataSize)
				s.disk += uint64(g.Size)
				s.last = max(s.last, g.Last)
			}
		}
	}
	return s, nil
}

// readTo reads epoch 1 of the archive in dir from its first record to
// sequence last with a fresh Reader's cursor, and returns the time.
func readTo(dir string, last uint64) (report.Duration, error) {
	r, err := rfa.Open(dir)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	start := time.Now()
	c, err := r.Seek(1, 1)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	for {
		e, err := c.Next()
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("archive: %s ends before %d", dir, last)
		}
		if err != nil {
			return 0, err
		}
		if e.Seq >= last {
			return report.Duration(time.Since(start)), nil
		}
	}
}
