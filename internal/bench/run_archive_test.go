package bench

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/archive"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/netns"
	"golang.org/x/sys/unix"
)

// The archive section at a tiny size: every sweep's steps are measured
// with the CPU of the producer and the recorder, each zero-gap step wrote
// every record pushed, dd, replay, seek and compression give figures,
// the tables show them, a mirror catches up from the archive, and no
// file is left behind. It asserts what was
// measured, never how fast.
func TestArchiveSection(t *testing.T) {
	netns.Require(t)
	disk := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(disk, &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		disk = "/var/tmp" // a test's directory on tmpfs: the disk's
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	before := leftovers(t, disk)
	rep, err := Run(ctx, Config{Sections: []string{"archive"}, Stress: 200 * time.Millisecond, Archive: archive.Config{
		Rates: []int{50_000, 100_000}, DiskRates: []int{5, 10}, DiskRecords: []int{64, 1024}, Syncs: []string{"none", "interval=100ms"},
		Step: 200 * time.Millisecond, DiskDir: disk, DDMiB: 16, Replay: 100_000, Seek: 300_000, Seeks: 50, Compress: 400_000,
		Catchup: 200_000, CatchupFill: 200_000, CatchupRate: 100_000, CatchupFor: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) > 0 {
		t.Fatalf("notes: %q", rep.Notes)
	}
	x := rep.Archive
	if x == nil || len(x.Record) != 5 || x.Record[0].Medium != "tmpfs" {
		t.Fatalf("recorded %+v, want tmpfs then four disk sweeps", x)
	}
	for _, r := range x.Record {
		if len(r.Sweep) == 0 || r.Capacity == 0 || r.Dir == "" {
			t.Errorf("%s %s %d: %+v", r.Medium, r.Sync, r.Record, r)
		}
		for _, s := range r.Sweep {
			if s.Pushed == 0 || len(s.CPU) != 2 || s.CPU[0].Role != "producer" || s.CPU[1].Role != "recorder" {
				t.Errorf("%s %s %d at %d/s: %+v", r.Medium, r.Sync, r.Record, s.Rate, s)
			}
			if s.ZeroGap() && (s.Bytes < s.Pushed*uint64(r.Record) || s.Achieved <= 0) {
				t.Errorf("%s at %d/s: no gap, but %d bytes for %d records", r.Medium, s.Rate, s.Bytes, s.Pushed)
			}
			if (r.Medium == "disk") != (s.Synced > 0) {
				t.Errorf("%s at %d/s: synced %v", r.Medium, s.Rate, s.Synced)
			}
		}
	}
	if x.Disk == nil || x.Disk.Bytes != 16<<20 || x.Disk.PerSec() <= 0 {
		t.Errorf("dd: %+v", x.Disk)
	}
	if x.Replay == nil || x.Replay.Records != 100_000 || x.Replay.Elapsed <= 0 || len(x.Replay.CPU) != 1 {
		t.Errorf("replay: %+v", x.Replay)
	}
	if x.Seek == nil || x.Seek.Records != 300_000 || len(x.Seek.Lat) != 4 || x.Seek.Segments == 0 {
		t.Fatalf("seek: %+v", x.Seek)
	}
	for _, l := range x.Seek.Lat {
		if l.Lat.Samples != 50 || l.Lat.P50 <= 0 {
			t.Errorf("seek by %s, %s: %+v", l.By, l.Cache, l.Lat)
		}
	}
	if len(x.Compress) != 2 {
		t.Fatalf("compression: %+v", x.Compress)
	}
	for _, c := range x.Compress {
		if c.Records == 0 || c.Compressed == 0 || c.Compressed >= c.Plain || c.SealZstd <= 0 || c.ReadZstd <= 0 {
			t.Errorf("compression of %s: %+v", c.Feed, c)
		}
	}
	if c := x.Catchup; c == nil || !c.Complete() || c.Records != 200_000 {
		t.Errorf("catch-up: %+v", c)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	for _, want := range []string{"archive: recording, the highest", "archive: recording sweep", "archive: replay", "archive: a seek", "archive: compression",
		"archive: a mirror catching up"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q", want)
		}
	}
	if after := leftovers(t, disk); after != before {
		t.Errorf("%d ringfire-bench files in %s before, %d after", before, disk, after)
	}
}

// leftovers counts the section's directories in dir.
func leftovers(t *testing.T, dir string) int {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, "ringfire-bench-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// A mirror catches up 200,000 records from serve --archive, most of them
// long overwritten in the ring, then follows a live load, live over each
// transport the catch-up takes: it ends holding every record once (no
// gap, none twice, its last records the source's), the catch-up timed
// with the CPU of every process, the archive on the disk, and no file
// left behind. It asserts what was measured, never how fast.
func TestArchiveCatchup(t *testing.T) {
	netns.Require(t)
	disk := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(disk, &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		disk = "/var/tmp"
	}
	for _, tr := range archive.CatchupTransports {
		t.Run(tr, func(t *testing.T) {
			before := leftovers(t, disk)
			r, err := newRig()
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.archive(&Config{Archive: archive.Config{DiskDir: disk, Catchup: 200_000, CatchupFill: 200_000, CatchupRate: 100_000,
				CatchupFor: 300 * time.Millisecond, CatchupTransport: tr}})
			if err != nil {
				r.close()
				t.Fatal(err)
			}
			c, err := b.Catchup()
			notes := b.Notes()
			r.close()
			if err != nil {
				t.Fatalf("%v: %+v", err, c)
			}
			t.Logf("%+v", c)
			if len(notes) > 0 {
				t.Errorf("notes: %q", notes)
			}
			l := c.Live
			switch {
			case !c.Complete() || c.Records != 200_000 || l.Last <= c.Records || l.Written != l.Last || l.Gaps != 0:
				t.Errorf("not every record once: %+v", c)
			case c.Capacity == 0 || c.Capacity > c.Records/4 || l.Compared != c.Capacity:
				t.Errorf("ring of %d slots, %d compared, for %d records", c.Capacity, l.Compared, c.Records)
			case l.History < c.Records-c.Capacity:
				t.Errorf("%d records from history, want at least the %d the ring had lost", l.History, c.Records-c.Capacity)
			case c.Elapsed <= 0 || c.Transport != tr || !strings.HasPrefix(c.Dir, disk):
				t.Errorf("catch-up: %+v", c)
			}
			var used float64 // in ticks of 10 ms: one phase of a tiny run may take none
			for _, cpu := range [][]report.ProcCPU{c.CPU, l.CPU} {
				if len(cpu) != 4 || cpu[2].Role != "serve" || cpu[3].Role != "mirror" {
					t.Fatalf("CPU: %+v", cpu)
				}
				used += cpu[2].Seconds + cpu[3].Seconds
			}
			if used <= 0 {
				t.Errorf("serve and mirror used no CPU: %+v, %+v", c.CPU, l.CPU)
			}
			if after := leftovers(t, disk); after != before {
				t.Errorf("%d ringfire-bench files in %s before, %d after", before, disk, after)
			}
			if left, _ := filepath.Glob(filepath.Join(r.dir, "*")); len(left) > 0 {
				t.Errorf("left in /dev/shm: %q", left)
			}
		})
	}
}
