package archive

import (
	"fmt"
	"strings"
	"time"
)

// Sync says when a Writer makes what it wrote durable (fdatasync). What a
// crash of the process alone loses is the same in every mode: only the
// write buffer (Options.BufferSize, written at every Flush); a power cut
// or a kernel crash loses more, as each mode says. Whatever is lost is
// lost at the tail: a reopened Writer cuts a torn entry and resumes.
type Sync int

const (
	// SyncNone never syncs: a power cut loses what the kernel had not
	// written back yet (by default up to about 30 s: vm.dirty_expire).
	SyncNone Sync = iota
	// SyncInterval syncs as it writes once Options.SyncEvery has passed
	// since the last sync, and at Writer.SyncDue (a recorder with nothing
	// to write calls it every few milliseconds): a power cut loses about
	// SyncEvery at most.
	SyncInterval
	// SyncSegment syncs each segment, its index and the directory as the
	// segment is sealed: a power cut loses at most the segment being
	// written (Options.SegmentSize).
	SyncSegment
)

func (s Sync) String() string {
	switch s {
	case SyncNone:
		return "none"
	case SyncInterval:
		return "interval"
	case SyncSegment:
		return "segment"
	}
	return fmt.Sprintf("sync(%d)", int(s))
}

// ParseSync parses "none", "segment" or "interval=D" (a Go duration).
func ParseSync(s string) (Sync, time.Duration, error) {
	switch {
	case s == "none":
		return SyncNone, 0, nil
	case s == "segment":
		return SyncSegment, 0, nil
	case strings.HasPrefix(s, "interval="):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "interval="))
		if err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("sync %q: want interval=DURATION, such as interval=100ms", s)
		}
		return SyncInterval, d, nil
	}
	return 0, 0, fmt.Errorf("sync %q: want none, interval=DURATION or segment", s)
}

// Options configure a Writer. The zero value is valid: 64 MiB segments,
// no sync, no compression, nothing removed.
type Options struct {
	// SegmentSize: a segment is sealed, and the next begun, once its data
	// reaches this many bytes (DefaultSegmentSize when 0; at least
	// MinSegmentSize).
	SegmentSize int64
	Sync        Sync
	SyncEvery   time.Duration // SyncInterval's period (1 s when 0)
	// Compress stores sealed segments as zstd blocks (".rfa.zst"); readers
	// read them as they read plain ones.
	Compress bool
	// MaxBytes and MaxAge retain sealed segments: the oldest are removed,
	// whole, while the sealed segments take more than MaxBytes, and when
	// their last entry is older than MaxAge. 0: no limit. The segment
	// being written is never removed.
	MaxBytes int64
	MaxAge   time.Duration
	// BufferSize is the write buffer: entries go to the file in writes of
	// this size, or at Flush (1 MiB when 0).
	BufferSize int
	// PageCache writes through the page cache even where the filesystem
	// takes O_DIRECT. By default the whole blocks of full buffers bypass
	// it: the kernel then copies nothing and writes nothing back, and
	// readers of the segment being written read the disk. The choice
	// changes no byte on disk and nothing a crash or power cut loses
	// (Sync says that).
	PageCache bool
}

const (
	DefaultSegmentSize = 64 << 20
	MinSegmentSize     = 4 << 10
	defaultBuffer      = 1 << 20
)

// check validates o and fills its defaults.
func (o *Options) check() error {
	switch {
	case o.SegmentSize < 0:
		return fmt.Errorf("archive: segment size %d", o.SegmentSize)
	case o.SegmentSize == 0:
		o.SegmentSize = DefaultSegmentSize
	case o.SegmentSize < MinSegmentSize:
		return fmt.Errorf("archive: segment size %d below %d", o.SegmentSize, MinSegmentSize)
	}
	if o.Sync < SyncNone || o.Sync > SyncSegment {
		return fmt.Errorf("archive: sync mode %d", o.Sync)
	}
	if o.SyncEvery < 0 || o.MaxBytes < 0 || o.MaxAge < 0 || o.BufferSize < 0 {
		return fmt.Errorf("archive: negative option in %+v", *o)
	}
	if o.SyncEvery == 0 {
		o.SyncEvery = time.Second
	}
	if o.BufferSize == 0 {
		o.BufferSize = defaultBuffer
	}
	return nil
}
