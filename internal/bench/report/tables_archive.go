package report

import (
	"fmt"
	"strconv"
	"time"
)

// The archive section's tables: the recording summary with the ratios
// its targets are stated in, the references of those ratios, every step
// of the sweeps, replay, seek and compression.

func perSec(n uint64, d Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / time.Duration(d).Seconds()
}

// fmtMBs formats bytes/s in MB/s (10^6).
func fmtMBs(v float64) string {
	if !valid(v) {
		return dash
	}
	mb := v / 1e6
	if mb >= 99.95 {
		return strconv.FormatFloat(mb, 'f', 0, 64) + " MB/s"
	}
	return strconv.FormatFloat(mb, 'f', 1, 64) + " MB/s"
}

// bestZeroLoss is the run's highest zero-loss replication rate (the
// stress section's), if it measured one.
func (r *Report) bestZeroLoss() (ZeroLoss, bool) {
	var best ZeroLoss
	for _, z := range r.ZeroLoss {
		if z.Rate > best.Rate {
			best = z
		}
	}
	return best, best.Rate > 0
}

// cpuPerRecord is role's CPU per record, µs.
func cpuPerRecord(cs []ProcCPU, role string, n uint64) string {
	for _, c := range cs {
		if c.Role == role && n > 0 {
			return fmtUS(c.Seconds / float64(n) * 1e6)
		}
	}
	return dash
}

// vsDD is what step s wrote a second against dd's bandwidth on the same
// medium: on the disk what was durable (synced), in tmpfs what was
// written.
func (x ArchiveRecord) vsDD(s ArchiveStep, dd *DiskBandwidth) string {
	if dd == nil {
		return dash
	}
	if x.Medium == "tmpfs" {
		return fmtRatio(perSec(s.Bytes, s.Elapsed), dd.PerSec())
	}
	return fmtRatio(perSec(s.Bytes, s.Synced), dd.PerSec())
}

func (r *Report) archiveRecordTable() table {
	t := table{title: "archive: recording, the highest offered rate with no gap (targets: 64-byte records into tmpfs ≥ 1.00× the zero-loss replication rate; onto the disk ≥ 0.80× dd's bandwidth; ÷ dd: against dd on the same medium, tmpfs's to new pages)",
		header: []string{"medium", "sync", "record B", "zero-gap/s", "achieved/s", "written", "durable", "÷ dd", "÷ zero-loss",
			"recorder CPU µs/record", "recorder cores", "producer cores"}}
	if r.Archive == nil {
		return t
	}
	zl, hasZL := r.bestZeroLoss()
	for _, x := range r.Archive.Record {
		dd := r.Archive.Disk
		if x.Medium == "tmpfs" {
			dd = r.Archive.Tmpfs
		}
		s := x.Best
		rate := ZeroLoss{Rate: s.Rate, Capped: x.Capped}
		durable, vsZL := perSec(s.Bytes, s.Synced), dash
		if hasZL && x.Record == r.Record {
			vsZL = fmtRatio(float64(s.Rate), float64(zl.Rate))
		}
		t.rows = append(t.rows, []string{x.Medium, x.Sync, strconv.Itoa(x.Record), zeroLossRate(rate), FormatSI(s.Achieved),
			fmtMBs(perSec(s.Bytes, s.Elapsed)), fmtMBs(durable), x.vsDD(s, dd), vsZL,
			cpuPerRecord(s.CPU, "recorder", s.Records), cpuOf(s.CPU, "recorder"), cpuOf(s.CPU, "producer")})
	}
	return t
}

func (r *Report) archiveRefTable() table {
	t := table{title: "archive: what the recording is compared with, measured in the same run", header: []string{"reference", "figure", "where"}}
	if r.Archive == nil || len(r.Archive.Record) == 0 {
		return t
	}
	if zl, ok := r.bestZeroLoss(); ok {
		t.rows = append(t.rows, []string{"zero-loss replication rate, the run's highest", zeroLossRate(zl) + "/s",
			fmt.Sprintf("stress section: %s, wait %s, %d-byte records", zl.Transport, zl.waitName(), r.Record)})
	} else {
		t.rows = append(t.rows, []string{"zero-loss replication rate", dash, "not measured: run the stress section too (--sections stress,archive)"})
	}
	if d := r.Archive.Tmpfs; d != nil {
		t.rows = append(t.rows, []string{"tmpfs write to new pages", fmtMBs(d.PerSec()), d.Tool + " on " + d.Dir})
	}
	if d := r.Archive.Disk; d != nil {
		t.rows = append(t.rows, []string{"disk sequential write, O_DIRECT", fmtMBs(d.PerSec()), d.Tool + " on " + d.Dir + "; fio " + d.Fio})
	}
	for _, x := range r.Archive.Record {
		if x.Medium == "disk" {
			t.rows = append(t.rows, []string{"the disk sweeps' archives", dash, x.Dir})
			break
		}
	}
	return t
}

func (r *Report) archiveSweepTable() table {
	t := table{title: "archive: recording sweep, a producer and a recorder process (CPU in cores)", header: []string{
		"medium", "sync", "record B", "ring", "offered/s", "achieved/s", "no gap", "gaps", "gap records", "written", "durable",
		"recorder", "producer"}}
	if r.Archive == nil {
		return t
	}
	yes := map[bool]string{true: "yes", false: "no"}
	for _, x := range r.Archive.Record {
		for _, s := range x.Sweep {
			t.rows = append(t.rows, []string{x.Medium, x.Sync, strconv.Itoa(x.Record), fmtCount(x.Capacity), FormatSI(float64(s.Rate)),
				FormatSI(s.Achieved), yes[s.ZeroGap()], fmtCount(s.Gaps), fmtCount(s.GapRecords),
				fmtMBs(perSec(s.Bytes, s.Elapsed)), fmtMBs(perSec(s.Bytes, s.Synced)), cpuOf(s.CPU, "recorder"), cpuOf(s.CPU, "producer")})
		}
	}
	return t
}

func (r *Report) archiveReplayTable() table {
	t := table{title: "archive: replay at speed max from a warm page cache into a ring, a replayer process (target ≥ 10 M records/s)",
		header: []string{"archive", "records", "records/s", "read", "replayer CPU µs/record", "replayer cores"}}
	if r.Archive == nil || r.Archive.Replay == nil || r.Archive.Replay.Records == 0 {
		return t
	}
	p := r.Archive.Replay
	t.rows = append(t.rows, []string{p.Dir, fmtCount(p.Records), FormatSI(perSec(p.Records, p.Elapsed)), fmtMBs(perSec(p.Bytes, p.Elapsed)),
		cpuPerRecord(p.CPU, "replayer", p.Records), cpuOf(p.CPU, "replayer")})
	return t
}

func (r *Report) archiveSeekTable() table {
	t := table{header: []string{"seek by", "page cache", "samples", "p50", "p99", "p99.9", "max"}}
	if r.Archive == nil || r.Archive.Seek == nil {
		return t
	}
	s := r.Archive.Seek
	t.title = fmt.Sprintf("archive: a seek and the first Next in an archive of %s records (%s bytes, %d segments, written in %s) on %s (µs; target ≤ 1000)",
		fmtCount(s.Records), FormatSI(float64(s.Bytes)), s.Segments, time.Duration(s.Build).Round(time.Millisecond), s.Dir)
	for _, l := range s.Lat {
		t.rows = append(t.rows, []string{l.By, l.Cache, fmtCount(uint64(max(l.Lat.Samples, 0))), fmtUS(l.Lat.P50), fmtUS(l.Lat.P99),
			fmtUS(l.Lat.P999), fmtUS(l.Lat.Max)})
	}
	return t
}

func (r *Report) archiveCompressTable() table {
	t := table{title: "archive: compression of sealed segments (zstd blocks), 64-byte records in tmpfs",
		header: []string{"feed", "records", "plain", "on disk", "÷ payload", "÷ plain", "seal plain ms/MB", "seal zstd ms/MB",
			"read plain", "read zstd"}}
	if r.Archive == nil {
		return t
	}
	msPerMB := func(d Duration, n uint64) string {
		if n == 0 {
			return dash
		}
		return fmtUS(time.Duration(d).Seconds() * 1e3 / (float64(n) / 1e6))
	}
	for _, c := range r.Archive.Compress {
		t.rows = append(t.rows, []string{c.Feed, fmtCount(c.Records), FormatSI(float64(c.Plain)) + "B", FormatSI(float64(c.Compressed)) + "B",
			fmtRatio(float64(c.Compressed), float64(c.Payload)), fmtRatio(float64(c.Compressed), float64(c.Plain)),
			msPerMB(c.SealPlain, c.Plain), msPerMB(c.SealZstd, c.Plain), fmtMBs(perSec(c.Plain, c.ReadPlain)), fmtMBs(perSec(c.Plain, c.ReadZstd))})
	}
	return t
}
