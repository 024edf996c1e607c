package archive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// TestRecordReplay records a fixed ring while it is written, then
// replays the archive into another ring: the same records at the same
// sequences, byte for byte.
func TestRecordReplay(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	p := rcRing(t, ring, 1024)
	rcPush(t, p, 1, 500, 1)
	w := rcOpenWriter(t, dir, Options{SegmentSize: 16 << 10})
	run := rcRecord(t, w, RecorderConfig{Ring: ring, Start: StartOldest})
	run.until(t, 500)
	rcPush(t, p, 501, 800, 1)
	run.until(t, 800)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	st := run.r.Stats()
	if st.Records != 800 || st.Gaps != 0 || st.Epochs != 1 || st.Next != 801 || st.Lag != 0 {
		t.Fatalf("stats %+v", st)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 800, 1})
	eps := rcEpochs(t, dir)
	if len(eps) != 1 || eps[0].Source.PayloadSize != 64 || eps[0].Source.Capacity != 1024 || eps[0].Source.SchemaSig != 0x5151 {
		t.Fatalf("epochs %+v", eps)
	}

	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := rcShmPath(t)
	rst, err := Replay(context.Background(), r, ReplayConfig{Ring: out})
	if err != nil {
		t.Fatal(err)
	}
	if rst != (ReplayStats{Records: 800, First: 1, Last: 800}) {
		t.Fatalf("replay stats %+v", rst)
	}
	for i, got := range rcRingRecords(t, out, 1, 800) {
		if !bytes.Equal(got, rcPayload(uint64(i+1), 1)) {
			t.Fatalf("replayed record %d differs", i+1)
		}
	}
}

// TestRecordResume stops a recorder, lets the ring go on (first within
// its capacity, then past it), and resumes: every record once, and a gap
// of exactly what the ring lost meanwhile.
func TestRecordResume(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	p := rcRing(t, ring, 64)
	rcPush(t, p, 1, 10, 1)
	w := rcOpenWriter(t, dir, Options{})
	run := rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, 10)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcPush(t, p, 11, 40, 1) // the ring still holds them
	run = rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, 40)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	w.Close()

	rcPush(t, p, 41, 300, 1) // oldest is 300-64+1 = 237
	w = rcOpenWriter(t, dir, Options{})
	run = rcRecord(t, w, RecorderConfig{Ring: ring, Start: StartResume})
	run.until(t, 300)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	if st := run.r.Stats(); st.Gaps != 1 || st.GapRecords != 236-41+1 || st.Records != 300-237+1 || st.Epochs != 0 {
		t.Fatalf("stats %+v", st)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 40, 1}, rcWant{41, 236, rcGap}, rcWant{237, 300, 1})
	if eps := rcEpochs(t, dir); len(eps) != 1 {
		t.Fatalf("%d epochs, want 1", len(eps))
	}
}

// TestRecordLapped: a recorder running beside a producer that laps a
// small ring in bursts holds each sequence exactly once, as the record
// the producer wrote or in a gap, and counts its gaps as the archive
// holds them. (TestRecordResume checks a lap of known size.)
func TestRecordLapped(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	p := rcRing(t, ring, 16)
	w := rcOpenWriter(t, dir, Options{})
	run := rcRecord(t, w, RecorderConfig{Ring: ring, Start: StartSeq, Seq: 5})
	run.until(t, 4) // attached: it waits for 5
	const n = 20000
	for s := uint64(1); s <= n; s += 1000 {
		rcPush(t, p, s, s+999, 1)
	}
	run.until(t, n)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	es := rcEntries(t, dir, 1)
	next, gaps, gapRecs := uint64(5), uint64(0), uint64(0)
	for _, e := range es {
		if e.Seq != next {
			t.Fatalf("entry %s after %d", rcDescribe([]Entry{e}, 0), next-1)
		}
		if e.Kind == KindRecord && !bytes.Equal(e.Rec, rcPayload(e.Seq, 1)) {
			t.Fatalf("record %d differs", e.Seq)
		}
		if e.Kind == KindGap {
			gaps++
			gapRecs += e.Last - e.Seq + 1
		}
		next = e.Last + 1
	}
	st := run.r.Stats()
	if next != n+1 || st.Gaps != gaps || st.GapRecords != gapRecs || st.Records+st.GapRecords != n-4 {
		t.Fatalf("archive ends at %d with %d gaps over %d records; stats %+v", next-1, gaps, gapRecs, st)
	}
	t.Logf("%d records, %d gaps over %d records", st.Records, gaps, gapRecs)
}

// TestRecordRestart: a producer that restarts under the recorder (a
// new ring at the path: created over the old file, as --replace does,
// or after it was removed) starts a new epoch; both epochs hold their
// ring's records, and nothing of one is in the other.
func TestRecordRestart(t *testing.T) {
	for _, how := range []string{"replace", "remove"} {
		t.Run(how, func(t *testing.T) {
			ring, dir := rcShmPath(t), t.TempDir()
			p := rcRing(t, ring, 256)
			rcPush(t, p, 1, 100, 1)
			w := rcOpenWriter(t, dir, Options{})
			run := rcRecord(t, w, RecorderConfig{Ring: ring})
			run.until(t, 100)
			p.Close()
			if how == "remove" {
				if err := os.Remove(ring); err != nil {
					t.Fatal(err)
				}
				testenv.Until(t, rcWait, "the removal seen", func() bool { return run.r.Stats().Replaced == 1 })
			}
			p = rcRing(t, ring, 256) // over the stale ring: a new file
			rcPush(t, p, 1, 50, 2)
			testenv.Until(t, rcWait, "a second epoch", func() bool { st := run.r.Stats(); return st.Epoch == 2 && st.Next > 50 })
			if err := run.end(t); err != nil {
				t.Fatal(err)
			}
			if st := run.r.Stats(); st.Replaced != 1 || st.Epochs != 2 || st.Records != 150 || st.Gaps != 0 {
				t.Fatalf("stats %+v", st)
			}
			rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 100, 1})
			rcCheck(t, rcEntries(t, dir, 2), rcWant{1, 50, 2})
			eps := rcEpochs(t, dir)
			if len(eps) != 2 || eps[0].Source.Ino == eps[1].Source.Ino {
				t.Fatalf("epochs %+v", eps)
			}
		})
	}
}

// TestRecordWaitsForRing: a recorder started before its ring exists
// waits for it, and records it from its first record.
func TestRecordWaitsForRing(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	w := rcOpenWriter(t, dir, Options{})
	run := rcRecord(t, w, RecorderConfig{Ring: ring, Start: StartOldest})
	p := rcRing(t, ring, 256)
	rcPush(t, p, 1, 20, 1)
	run.until(t, 20)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 20, 1})
}

// TestRecordFlushes: records reach the archive's readers soon after the
// recorder caught up, yet the writer writes at most once per FlushDelay
// however the records trickle in: here one at a time, each read before
// the next is written.
func TestRecordFlushes(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	p := rcRing(t, ring, 1024)
	w := rcOpenWriter(t, dir, Options{})
	const delay = 5 * time.Millisecond
	run := rcRecord(t, w, RecorderConfig{Ring: ring, FlushDelay: delay})
	run.until(t, 0)
	start := time.Now()
	for s := uint64(1); s <= 300; s++ {
		rcPush(t, p, s, s, 1)
		run.until(t, s)
	}
	took := time.Since(start)
	flushes := run.r.Stats().Writer.Flushes
	if max := uint64(took/delay) + 1; flushes > max {
		t.Fatalf("%d flushes in %v of records trickling in, want at most %d", flushes, took, max)
	}
	r := rcOpen(t, dir)
	var c *Cursor
	testenv.Until(t, rcWait, "the epoch listed", func() bool {
		var err error
		c, err = r.Seek(1, 1)
		return err == nil
	})
	defer c.Close()
	var es []Entry
	testenv.Until(t, rcWait, "records 1..300 readable while recording", func() bool {
		es = append(es, rcDrain(t, c)...)
		return len(es) == 300
	})
	rcCheck(t, es, rcWant{1, 300, 1})
	t.Logf("%d flushes for 300 records in %v", flushes, took)
}

// TestRecordCut: a ring cut (truncated) under the recorder is an error
// of that ring: counted, and the next valid ring at the path is a new
// epoch. The process does not crash.
func TestRecordCut(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	p := rcRing(t, ring, 256)
	rcPush(t, p, 1, 30, 1)
	w := rcOpenWriter(t, dir, Options{})
	run := rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, 30)
	if err := os.Truncate(ring, 0); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, rcWait, "the cut counted", func() bool { return run.r.Stats().Cuts == 1 })
	p.Close() // unmaps without touching the cut pages
	p = rcRing(t, ring, 256)
	rcPush(t, p, 1, 20, 3)
	testenv.Until(t, rcWait, "the new ring recorded", func() bool { st := run.r.Stats(); return st.Epoch == 2 && st.Next > 20 })
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 30, 1})
	rcCheck(t, rcEntries(t, dir, 2), rcWant{1, 20, 3})
}

// TestRecordCutFault: with no periodic check due (Poll of an hour), the
// cut is met as a fault on the ring's mapping: an error of the ring,
// counted, not a crash.
func TestRecordCutFault(t *testing.T) {
	ring, dir := rcShmPath(t), t.TempDir()
	p := rcRing(t, ring, 256)
	rcPush(t, p, 1, 30, 1)
	w := rcOpenWriter(t, dir, Options{})
	run := rcRecord(t, w, RecorderConfig{Ring: ring, Poll: time.Hour})
	run.until(t, 30)
	if err := os.Truncate(ring, 0); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, rcWait, "the cut counted", func() bool { return run.r.Stats().Cuts == 1 })
	p.Close()
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, 30, 1})
}

// TestRecorderConfig: bad configurations are refused, naming what is
// wrong; ParseStart takes what --from takes.
func TestRecorderConfig(t *testing.T) {
	w := rcOpenWriter(t, t.TempDir(), Options{})
	for _, c := range []RecorderConfig{{}, {Ring: "x", Start: 7}, {Ring: "x", Start: StartSeq}, {Ring: "x", FlushDelay: -1}, {Ring: "x", Poll: -1}} {
		if _, err := NewRecorder(w, c); err == nil {
			t.Errorf("NewRecorder(%+v) took it", c)
		}
	}
	if _, err := NewRecorder(nil, RecorderConfig{Ring: "x"}); err == nil {
		t.Error("NewRecorder took no writer")
	}
	for in, want := range map[string]Start{"resume": StartResume, "oldest": StartOldest, "17": StartSeq} {
		s, n, err := ParseStart(in)
		if err != nil || s != want || (s == StartSeq) != (n == 17) {
			t.Errorf("ParseStart(%q) = %v, %d, %v", in, s, n, err)
		}
	}
	for _, in := range []string{"", "0", "-1", "newest", "1x"} {
		if _, _, err := ParseStart(in); err == nil {
			t.Errorf("ParseStart(%q) took it", in)
		}
	}
}

var _ = errors.Is
