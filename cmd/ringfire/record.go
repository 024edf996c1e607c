package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ringfire/ringfire/archive"
)

const recordHelp = `Record follows the ring at RING (a producer's ring or a mirror's) and
appends every record, with its sequence and the time the recorder saw it, to
the archive in DIR (made if need be): segment files of --segment-size bytes,
each sealed and indexed once full (a seek by sequence or time reads one index
and at most 64 KiB), compressed with zstd by --compress (readers do not
notice). --from picks the first record: resume (after the last one DIR holds
of this ring; a new ring from its oldest), oldest (the ring's oldest, never
before what DIR holds) or a sequence number. Where the recorder fell more
than the ring behind, DIR holds a gap entry over what it lost, logged and
counted: nothing is skipped silently. A producer restart (a new ring file at
RING) starts a new epoch instead of mixing two streams; recording waits for a
ring that does not exist yet. A record waits at most --flush-delay in the
write buffer once the recorder caught up. Full write buffers bypass the
page cache (O_DIRECT, whole blocks) where DIR's filesystem takes it, which
halves the CPU a record costs on a disk; --page-cache writes through the cache instead
(readers of the newest records then read memory, not the disk); the bytes on
disk are the same either way. --sync says what a power cut (or a
kernel crash) can lose; a crash of the recorder alone loses only its write
buffer, in every mode: none never syncs, and a power cut loses what the
kernel had not written back yet (up to about 30 s, vm.dirty_expire);
interval=D syncs once D has passed since the last sync, also while the
recorder is idle, and a power cut loses about D at most; segment syncs each segment, its index and DIR as
the segment is sealed, and a power cut loses at most the segment being
written. Whatever is lost is lost at the tail: after a crash, record --from
resume cuts the torn last entry (found by its CRC) and goes on from the next
record the ring still holds, none twice. --max-bytes and --max-age remove the
oldest sealed segments, whole, once they take more space or their last entry
is older; the segment being written is never removed. A write that fails (a
full disk) stops recording with an error naming DIR (exit status 1): the ring
and its producer are only ever read. --metrics ADDR serves Prometheus
metrics (ringfire_record_*). The counters are printed when it ends.`

// recordFlags are the flags that describe one recorder: record's, and
// the keys of a [[record]] table of ringfire run.
type recordFlags struct {
	from, sync         string
	segmentSize        byteFlag
	maxBytes           byteFlag
	maxAge, flushDelay time.Duration
	compress           bool
	pageCache          bool
}

func addRecordFlags(fs *flag.FlagSet) *recordFlags {
	f := &recordFlags{segmentSize: byteFlag{n: archive.DefaultSegmentSize}}
	fs.StringVar(&f.from, "from", "resume", "start `at` resume, oldest or a sequence number")
	fs.StringVar(&f.sync, "sync", "none", "make what is written durable: `none`, interval=DURATION or segment (see above for what a power cut loses in each)")
	fs.Var(&f.segmentSize, "segment-size", fmt.Sprintf("seal a segment, and begin the next, once it holds `BYTES` (K, M, G suffixes; at least %s)", formatSize(archive.MinSegmentSize)))
	fs.BoolVar(&f.compress, "compress", false, "store sealed segments compressed (zstd blocks)")
	fs.BoolVar(&f.pageCache, "page-cache", false, "write through the page cache even where the filesystem takes O_DIRECT")
	fs.Var(&f.maxBytes, "max-bytes", "remove the oldest sealed segments while they take more than `BYTES` (K, M, G suffixes; 0: no limit)")
	fs.DurationVar(&f.maxAge, "max-age", 0, "remove sealed segments whose last entry is older than `DURATION` (0: no limit)")
	fs.DurationVar(&f.flushDelay, "flush-delay", 5*time.Millisecond, "longest a record waits in the write buffer once the recorder caught up (`DURATION`, 100µs..10s)")
	return f
}

// check validates the flags and returns the writer's options and the
// recorder's configuration of ring.
func (f *recordFlags) check(ring string) (archive.Options, archive.RecorderConfig, error) {
	var opts archive.Options
	start, seq, err := archive.ParseStart(f.from)
	if err != nil {
		return opts, archive.RecorderConfig{}, usagef("--from %q: want resume, oldest or a sequence number from 1", f.from)
	}
	cfg := archive.RecorderConfig{Ring: ring, Start: start, Seq: seq, FlushDelay: f.flushDelay}
	if opts.Sync, opts.SyncEvery, err = archive.ParseSync(f.sync); err != nil {
		return opts, cfg, usagef("--sync %q: want none, interval=DURATION (such as interval=100ms) or segment", f.sync)
	}
	switch {
	case f.segmentSize.n < archive.MinSegmentSize:
		return opts, cfg, usagef("--segment-size %s: want at least %s", f.segmentSize.String(), formatSize(archive.MinSegmentSize))
	case f.maxBytes.n != 0 && f.maxBytes.n < f.segmentSize.n:
		return opts, cfg, usagef("--max-bytes %s: want 0 (no limit) or at least --segment-size (%s): retention removes whole segments",
			f.maxBytes.String(), f.segmentSize.String())
	case f.maxAge < 0:
		return opts, cfg, usagef("--max-age %v: want 0 (no limit) or a positive duration", f.maxAge)
	case f.flushDelay < 100*time.Microsecond || f.flushDelay > 10*time.Second:
		return opts, cfg, usagef("--flush-delay %v: want 100µs..10s", f.flushDelay)
	}
	opts.SegmentSize, opts.Compress, opts.PageCache = f.segmentSize.n, f.compress, f.pageCache
	opts.MaxBytes, opts.MaxAge = f.maxBytes.n, f.maxAge
	return opts, cfg, nil
}

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("record", "RING DIR [flags]", recordHelp, stderr)
	f := addRecordFlags(fs)
	var (
		metrics            string
		asJSON             bool
		duration, interval time.Duration
	)
	fs.StringVar(&metrics, "metrics", "", "serve Prometheus metrics on `[host]:port` (no host: 127.0.0.1)")
	addRunFlags(fs, &duration, &interval, &asJSON)
	logFormat := fs.String("log-format", "text", "log as `text` or json")
	pos, err := parseArgs(fs, args, "RING", "DIR")
	if err != nil {
		return helpOr(err)
	}
	if err := checkRunFlags(duration, interval); err != nil {
		return err
	}
	log, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	u, err := f.unit(pos[0], pos[1], log)
	if err != nil {
		return err
	}
	ctx, cancel := runContext(ctx, duration)
	defer cancel()
	if metrics != "" {
		addr, err := metricsAddr(metrics)
		if err != nil {
			return err
		}
		var set unitSet
		set.addRecord(u)
		at, err := startMetrics(ctx, addr, &set, log)
		if err != nil {
			return err
		}
		log.Info("metrics", "addr", at, "metrics", "/metrics")
	}
	go everyTick(ctx, interval, func() { printRecordStats(stdout, u.stats(), false) })
	err = u.run(ctx, nil)
	printRecordStats(stdout, u.stats(), asJSON)
	return err
}

func printRecordStats(w io.Writer, st archive.RecorderStats, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(st)
		return
	}
	ws := st.Writer
	fmt.Fprintf(w, "record: epoch %d, next %d, ring write_seq %d, lag %d, epochs %d (replaced rings %d, cut %d)\n",
		st.Epoch, st.Next, st.WriteSeq, st.Lag, st.Epochs, st.Replaced, st.Cuts)
	fmt.Fprintf(w, "  archived: records %d, gaps %d (%d records), bytes %d\n", st.Records, st.Gaps, st.GapRecords, ws.Bytes)
	fmt.Fprintf(w, "  writer: flushes %d, syncs %d, segments sealed %d, removed %d, torn bytes cut %d, write errors %d\n",
		ws.Flushes, ws.Syncs, ws.Sealed, ws.Removed, ws.TornBytes, ws.WriteErrors)
}
