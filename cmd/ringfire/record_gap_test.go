package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/testenv"
)

// A recorder that falls more than the ring behind (stopped while the
// producer laps it) writes a gap entry over what it lost, logs it and
// counts it; archive stat and dump show it, and replay makes it a hole.
func TestRecordGap(t *testing.T) {
	dir := shmDir(t)
	ring, arch, copy := filepath.Join(dir, "ring"), filepath.Join(dir, "arch"), filepath.Join(dir, "copy")
	gen := startChild(t, "gen", "gen", ring, "--rate", "50000", "--capacity", "1024")
	testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(ring) > 0 })
	rec := startChild(t, "record", "record", ring, arch, "--segment-size", "64K")
	_, first := archiveEnd(t, arch)
	awaitArchived(t, arch, first+2000)
	rec.cmd.Process.Signal(syscall.SIGSTOP)
	growingBy(t, ring, 4096) // four rings' worth: the recorder is lapped
	rec.cmd.Process.Signal(syscall.SIGCONT)
	rec.waitLog(t, "gaps written")
	_, last := archiveEnd(t, arch)
	awaitArchived(t, arch, last+2000)
	rec.stop(t)
	gen.cmd.Process.Kill()
	stat := mustRun(t, "archive", "stat", arch)
	if strings.Contains(stat, "gaps 0 (") {
		t.Fatalf("archive stat shows no gap:\n%s", stat)
	}
	r, err := archive.Open(arch)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil || len(eps) != 1 {
		t.Fatalf("epochs %v, %v", eps, err)
	}
	c, err := r.Seek(1, eps[0].First)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var gap archive.Entry
	for next := eps[0].First; next <= eps[0].Last; {
		e, err := c.Next()
		if err != nil {
			t.Fatalf("at %d: %v", next, err)
		}
		if e.Seq != next {
			t.Fatalf("entry at %d after %d", e.Seq, next-1)
		}
		if e.Kind == archive.KindGap && e.Last-e.Seq > gap.Last-gap.Seq {
			gap = e // the longest: the stop's (a ring this small may lap the recorder for a moment besides)
		}
		next = e.Last + 1
	}
	if gap.Seq == 0 || gap.Last-gap.Seq+1 < 1024 {
		t.Fatalf("gap %+v, want one over at least a ring's worth", gap)
	}
	dump := mustRun(t, "archive", "dump", arch, "--from", fmt.Sprint(gap.Seq), "--count", "1")
	wantContains(t, "archive dump", dump, fmt.Sprintf("seq %d..%d: gap", gap.Seq, gap.Last))
	mustRun(t, "replay", arch, copy, "--from", fmt.Sprint(gap.Seq-1), "--to", fmt.Sprint(gap.Last+1))
	got := ringSlots(t, copy, gap.Seq-1, gap.Last+1)
	if got[0] == nil || got[len(got)-1] == nil || got[1] != nil {
		t.Fatalf("the replayed ring around the gap %d..%d: want a record, holes, a record", gap.Seq, gap.Last)
	}
}

// --max-bytes removes the oldest sealed segments, whole: what stays of
// them fits the limit, and the archive begins later; archive stat --json
// says so.
func TestRecordRetention(t *testing.T) {
	dir := shmDir(t)
	ring, arch := filepath.Join(dir, "ring"), filepath.Join(dir, "arch")
	mustRun(t, "gen", ring, "--count", "20000", "--capacity", "32768")
	rec := startChild(t, "record", "record", ring, arch, "--from", "oldest", "--segment-size", "16K", "--max-bytes", "64K")
	awaitArchived(t, arch, 20000)
	rec.stop(t)
	if strings.Contains(rec.logs(), "removed 0,") {
		t.Fatalf("no segment removed:\n%s", rec.logs())
	}
	var st archiveStat
	if err := json.Unmarshal([]byte(mustRun(t, "archive", "stat", arch, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Epochs) != 1 {
		t.Fatalf("epochs %+v", st.Epochs)
	}
	ep := st.Epochs[0]
	var sealed int64
	for _, s := range ep.Segments {
		if s.Sealed {
			sealed += s.Size
		}
	}
	if ep.First == 1 || ep.Last != 20000 || sealed > 64<<10 || ep.Records != ep.Last-ep.First+1 {
		t.Fatalf("after retention: sequences %d..%d, %d records, sealed segments of %d bytes (limit 64K)", ep.First, ep.Last, ep.Records, sealed)
	}
}
