package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// archiveReport is the archive section with the stress section's
// zero-loss rates beside it.
func archiveReport() *Report {
	sec := func(s float64) Duration { return Duration(s * float64(time.Second)) }
	cpu := func(rec, prod float64) []ProcCPU {
		return []ProcCPU{{Role: "producer", Seconds: prod, PerSec: prod}, {Role: "recorder", Seconds: rec, PerSec: rec}}
	}
	tmpfs := ArchiveStep{Rate: 8_000_000, Pushed: 8_000_000, Records: 8_000_000, Bytes: 768_000_000, Written: true,
		Achieved: 7_900_000, Elapsed: sec(1), CPU: cpu(0.8, 0.3)}
	lost := ArchiveStep{Rate: 10_000_000, Pushed: 10_000_000, Records: 9_000_000, Gaps: 3, GapRecords: 1_000_000, Bytes: 864_000_000,
		Written: true, Achieved: 9_800_000, Elapsed: sec(1), CPU: cpu(1, 0.4)}
	disk := ArchiveStep{Rate: 300_000, Pushed: 300_000, Records: 300_000, Bytes: 1_238_400_000, Written: true, Achieved: 299_000,
		Elapsed: sec(1), Synced: sec(1.2), CPU: cpu(0.5, 0.1)}
	return &Report{Record: 64,
		ZeroLoss: []ZeroLoss{{Transport: "udp-unicast", Wait: "yield", Rate: 3_200_000}, {Transport: "xdp-unicast", Wait: "loop-yield", Rate: 6_400_000}},
		Archive: &Archive{
			Record: []ArchiveRecord{
				{Medium: "tmpfs", Dir: "/dev/shm/x (tmpfs)", Sync: "none", Record: 64, Capacity: 1 << 20, Best: tmpfs, Sweep: []ArchiveStep{tmpfs, lost}},
				{Medium: "disk", Dir: "/var/tmp (ext2/3/4 on /dev/vda)", Sync: "interval=100ms", Record: 4096, Capacity: 16384, Best: disk,
					Sweep: []ArchiveStep{disk}, Capped: true},
			},
			Tmpfs:  &DiskBandwidth{Dir: "/dev/shm/x (tmpfs)", Tool: "dd if=/dev/zero of=F bs=1M count=1024", Bytes: 1_536_000_000, Elapsed: sec(1), Fio: "absent"},
			Disk:   &DiskBandwidth{Dir: "/var/tmp (ext2/3/4 on /dev/vda)", Tool: "dd if=/dev/zero of=F bs=1M count=1024 oflag=direct", Bytes: 1_700_000_000, Elapsed: sec(1), Fio: "absent"},
			Replay: &ArchiveReplay{Dir: "/var/tmp", Records: 8_000_000, Bytes: 768_000_000, Elapsed: sec(0.8), CPU: []ProcCPU{{Role: "replayer", Seconds: 0.72, PerSec: 0.9}}},
			Seek: &ArchiveSeek{Dir: "/var/tmp", Records: 100_000_000, Bytes: 9_600_000_000, Segments: 144, Build: sec(21),
				Lat: []SeekLatency{{By: "sequence", Cache: "cold", Lat: pct(2000, 310, 900, 4000)}}},
			Compress: []ArchiveCompress{{Feed: "synthetic", Records: 1_000_000, Payload: 64_000_000, Plain: 96_000_000, Compressed: 64_000_000,
				SealPlain: sec(0.01), SealZstd: sec(1.6), ReadPlain: sec(0.064), ReadZstd: sec(0.16)}},
		}}
}

// The archive tables give the ratios of the targets: recording against
// the run's highest zero-loss rate and against dd, replay's rate, the
// seek's percentiles, compression's ratios and costs.
func TestArchiveTables(t *testing.T) {
	var b bytes.Buffer
	if err := archiveReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	// tmpfs's ÷ dd is what it wrote against dd to new tmpfs pages.
	wantRow(t, out, "tmpfs", "none", "64", "8.00 M", "7.90 M", "768 MB/s", "-", "0.50×", "1.25×", "0.10", "0.80", "0.30")
	wantRow(t, out, "disk", "interval=100ms", "4096", "≥ 300 k", "299 k", "1238 MB/s", "1032 MB/s", "0.61×", "-", "1.67", "0.50", "0.10")
	wantRow(t, out, "zero-loss replication rate, the run's highest", "6.40 M/s", "stress section: xdp-unicast, wait loop-yield, 64-byte records")
	wantRow(t, out, "disk sequential write, O_DIRECT", "1700 MB/s")
	wantRow(t, out, "tmpfs write to new pages", "1536 MB/s")
	for v, want := range map[float64]string{99.99e6: "100 MB/s", 99.94e6: "99.9 MB/s", 5e4: "0.1 MB/s", 0: "-"} {
		if got := fmtMBs(v); got != want {
			t.Errorf("fmtMBs(%v) = %q, want %q", v, got, want)
		}
	}
	wantRow(t, out, "tmpfs", "none", "64", "1,048,576", "10.0 M", "9.80 M", "no", "3", "1,000,000")
	wantRow(t, out, "/var/tmp", "8,000,000", "10.0 M", "960 MB/s", "0.09", "0.90")
	wantRow(t, out, "sequence", "cold", "2,000", "310.0", "900.0", "1440", "4000")
	wantRow(t, out, "synthetic", "1,000,000", "96.0 MB", "64.0 MB", "1.00×", "0.67×", "0.10", "16.7", "1500 MB/s", "600 MB/s")
	if !strings.Contains(out, "an archive of 100,000,000 records (9.60 G bytes, 144 segments, written in 21s)") {
		t.Errorf("seek title lacks the archive's size")
	}
	var md bytes.Buffer
	if err := archiveReport().WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Archive\n") || !strings.Contains(md.String(), "### archive: recording sweep") {
		t.Errorf("markdown lacks the archive section:\n%s", md.String())
	}
}

// Without the stress section, the ratio to the zero-loss rate is a dash
// and the reference says how to get it.
func TestArchiveWithoutZeroLoss(t *testing.T) {
	r := archiveReport()
	r.ZeroLoss = nil
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	wantRow(t, b.String(), "tmpfs", "none", "64", "8.00 M", "7.90 M", "768 MB/s", "-", "0.50×", "-", "0.10")
	if !strings.Contains(b.String(), "--sections stress,archive") {
		t.Errorf("no hint at the stress section:\n%s", b.String())
	}
}
