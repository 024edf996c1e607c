package archive

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// rcSrc is the ring the replay tests' archives record: 64-byte records.
var rcSrc = Source{Geometry: Geometry{PayloadSize: 64, Capacity: 1024, SchemaSig: 0x77}, Dev: 3, Ino: 4}

// rcBase is the time of sequence 0 in rcArchive: record s is seen at
// rcBase + s ms.
const rcBase = int64(1_700_000_000_000_000_000)

func rcTime(s uint64) int64 { return rcBase + int64(s)*int64(time.Millisecond) }

// rcArchive writes records from..to of rcSrc, with a gap over
// gapFrom..gapTo (none when 0), each at rcTime, into dir; the writer is
// returned open.
func rcArchive(tb testing.TB, dir string, from, to, gapFrom, gapTo uint64) *Writer {
	tb.Helper()
	w := rcOpenWriter(tb, dir, Options{SegmentSize: 16 << 10})
	if _, err := w.Begin(rcSrc, from, rcTime(from)); err != nil {
		tb.Fatal(err)
	}
	rcAppend(tb, w, from, to, gapFrom, gapTo)
	return w
}

// rcAppend appends records from..to (a gap over gapFrom..gapTo) and
// flushes.
func rcAppend(tb testing.TB, w *Writer, from, to, gapFrom, gapTo uint64) {
	tb.Helper()
	for s := from; s <= to; s++ {
		var err error
		if s == gapFrom && gapFrom != 0 {
			err, s = w.Gap(gapFrom, gapTo, rcTime(s)), gapTo
		} else {
			err = w.Append(s, rcTime(s), rcPayload(s, 1))
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// rcOpen opens the archive in dir for reading.
func rcOpen(tb testing.TB, dir string) *Reader {
	tb.Helper()
	r, err := Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// rcRingState fails unless the ring at path holds exactly the records
// from..to outside the holes (SlotHole), and has published to.
func rcRingState(tb testing.TB, path string, from, to uint64, holes ...[2]uint64) {
	tb.Helper()
	ring, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer ring.Close()
	if ws := ring.WriteSeq(); ws != to {
		tb.Fatalf("write_seq %d, want %d", ws, to)
	}
	p := make([]byte, 64)
	for s := max(from, 2) - 1; s <= to+1; s++ {
		st, err := ring.ReadSlot(s, p)
		want := shm.SlotReady
		switch {
		case s < from:
			want = shm.SlotHole
		case s > to:
			want = shm.SlotNotYet
		}
		for _, h := range holes {
			if s >= h[0] && s <= h[1] {
				want = shm.SlotHole
			}
		}
		if st != want || err != nil {
			tb.Fatalf("record %d: %v (%v), want %v", s, st, err, want)
		}
		if st == shm.SlotReady && !bytes.Equal(p, rcPayload(s, 1)) {
			tb.Fatalf("record %d differs", s)
		}
	}
}

// TestReplayBounds replays by sequence, by time and by both, across a
// gap (holes in the sparse ring) and with a gap cut by the bounds.
func TestReplayBounds(t *testing.T) {
	dir := t.TempDir()
	rcArchive(t, dir, 1, 1000, 400, 449)
	r := rcOpen(t, dir)
	for _, c := range []struct {
		name     string
		cfg      ReplayConfig
		st       ReplayStats
		from, to uint64
		holes    [][2]uint64
	}{
		{"seq", ReplayConfig{From: 100, To: 500}, ReplayStats{Records: 351, Gaps: 1, GapRecords: 50, First: 100, Last: 500}, 100, 500, [][2]uint64{{400, 449}}},
		{"time", ReplayConfig{FromTime: rcTime(200), ToTime: rcTime(300) + 500}, ReplayStats{Records: 101, First: 200, Last: 300}, 200, 300, nil},
		{"both", ReplayConfig{From: 250, FromTime: rcTime(200), ToTime: rcTime(300)}, ReplayStats{Records: 51, First: 250, Last: 300}, 250, 300, nil},
		{"gap cut", ReplayConfig{From: 420, To: 460}, ReplayStats{Records: 11, Gaps: 1, GapRecords: 30, First: 450, Last: 460}, 450, 460, nil},
		{"all", ReplayConfig{}, ReplayStats{Records: 950, Gaps: 1, GapRecords: 50, First: 1, Last: 1000}, 1, 1000, [][2]uint64{{400, 449}}},
		{"to only", ReplayConfig{To: 10}, ReplayStats{Records: 10, First: 1, Last: 10}, 1, 10, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Ring = rcShmPath(t)
			st, err := Replay(context.Background(), r, c.cfg)
			if err != nil || st != c.st {
				t.Fatalf("Replay(%+v) = %+v, %v; want %+v", c.cfg, st, err, c.st)
			}
			rcRingState(t, c.cfg.Ring, c.from, c.to, c.holes...)
		})
	}
}

// TestReplayErrors: bad configurations, an unknown epoch, a ring of
// another geometry at the path (refused unless Replace).
func TestReplayErrors(t *testing.T) {
	dir := t.TempDir()
	rcArchive(t, dir, 1, 10, 0, 0)
	r := rcOpen(t, dir)
	ring := rcShmPath(t)
	for _, c := range []ReplayConfig{{}, {Ring: ring, Speed: -1}, {Ring: ring, From: 5, To: 4}, {Ring: ring, FromTime: 5, ToTime: 4}, {Ring: ring, FromTime: -1}} {
		if _, err := Replay(context.Background(), r, c); err == nil {
			t.Errorf("Replay(%+v) took it", c)
		}
	}
	if _, err := Replay(context.Background(), r, ReplayConfig{Ring: ring, Epoch: 9}); !errors.Is(err, ErrNotFound) {
		t.Errorf("epoch 9: %v, want ErrNotFound", err)
	}
	other := rcRing(t, ring, 16)
	other.Close()
	if _, err := Replay(context.Background(), r, ReplayConfig{Ring: ring}); !errors.Is(err, shm.ErrGeometry) {
		t.Errorf("over a ring of another geometry: %v, want shm.ErrGeometry", err)
	}
	if st, err := Replay(context.Background(), r, ReplayConfig{Ring: ring, Replace: true}); err != nil || st.Records != 10 {
		t.Errorf("Replace: %+v, %v", st, err)
	}
	rcRingState(t, ring, 1, 10)
}

// rcArrivals reads the ring at path as it is written and returns when
// each of records 1..n became visible.
func rcArrivals(tb testing.TB, path string, n uint64) <-chan []time.Time {
	out := make(chan []time.Time, 1)
	go func() {
		var ring *shm.Ring
		testenv.Await(rcWait, func() bool {
			var err error
			ring, err = shm.Open(path, shm.OpenOptions{Notify: true})
			return err == nil
		})
		if ring == nil {
			out <- nil
			return
		}
		defer ring.Close()
		var at []time.Time
		deadline := time.Now().Add(rcWait)
		for s := uint64(1); s <= n && time.Now().Before(deadline); {
			if ring.Await(s, shm.FutexWait(16), time.Second) {
				now := time.Now()
				for ; s <= ring.WriteSeq() && s <= n; s++ {
					at = append(at, now)
				}
			}
		}
		out <- at
	}()
	return out
}

// TestReplayPaced: at Speed 1 each record becomes visible no sooner than
// its original time after the first (the entries are 1 ms apart), and
// the whole takes about as long as the original; at Speed 4, a quarter.
// The upper bounds are loose: this is not a benchmark.
func TestReplayPaced(t *testing.T) {
	dir := t.TempDir()
	const n = 200 // 199 ms of records
	rcArchive(t, dir, 1, n, 0, 0)
	r := rcOpen(t, dir)
	for _, speed := range []float64{1, 4} {
		ring := rcShmPath(t)
		arrivals := rcArrivals(t, ring, n)
		start := time.Now()
		st, err := Replay(context.Background(), r, ReplayConfig{Ring: ring, Speed: speed})
		took := time.Since(start)
		if err != nil || st.Records != n {
			t.Fatalf("speed %v: %+v, %v", speed, st, err)
		}
		at := <-arrivals
		if len(at) != n {
			t.Fatalf("speed %v: saw %d records", speed, len(at))
		}
		for i, a := range at {
			due := time.Duration(float64(time.Duration(i)*time.Millisecond) / speed)
			if a.Sub(start) < due {
				t.Fatalf("speed %v: record %d visible %v after the start, due at %v", speed, i+1, a.Sub(start), due)
			}
		}
		want := time.Duration(float64((n-1)*time.Millisecond) / speed)
		if took < want || took > 5*want+time.Second {
			t.Fatalf("speed %v: took %v, want about %v", speed, took, want)
		}
		t.Logf("speed %v: %v for %v of records", speed, took, (n-1)*time.Millisecond)
	}
}

// TestReplayFollow: a following replay writes what the archive's writer
// appends later, until its context ends.
func TestReplayFollow(t *testing.T) {
	dir := t.TempDir()
	w := rcArchive(t, dir, 1, 100, 0, 0)
	r := rcOpen(t, dir)
	ring := rcShmPath(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		st  ReplayStats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := Replay(ctx, r, ReplayConfig{Ring: ring, Follow: true})
		done <- result{st, err}
	}()
	writeSeq := func() uint64 {
		ring, err := shm.Open(ring, shm.OpenOptions{})
		if err != nil {
			return 0
		}
		defer ring.Close()
		return ring.WriteSeq()
	}
	testenv.Until(t, rcWait, "records 1..100 replayed", func() bool { return writeSeq() == 100 })
	rcAppend(t, w, 101, 20000, 150, 160) // across several segments
	testenv.Until(t, rcWait, "records 101..20000 replayed", func() bool { return writeSeq() == 20000 })
	cancel()
	res := <-done
	if res.err != nil || res.st.Records != 20000-11 || res.st.Gaps != 1 {
		t.Fatalf("Replay: %+v, %v", res.st, res.err)
	}
	for i, p := range rcRingRecords(t, ring, 20000-1023, 20000) {
		if !bytes.Equal(p, rcPayload(20000-1023+uint64(i), 1)) {
			t.Fatalf("record %d differs", 20000-1023+i)
		}
	}
}

// TestReplayFollowEnds: a following replay of an epoch ends, having
// written all of it, once its writer begins a later epoch (a new ring).
func TestReplayFollowEnds(t *testing.T) {
	dir := t.TempDir()
	w := rcArchive(t, dir, 1, 100, 0, 0)
	r := rcOpen(t, dir)
	done := make(chan error, 1)
	var st ReplayStats
	go func() {
		var err error
		st, err = Replay(context.Background(), r, ReplayConfig{Ring: rcShmPath(t), Epoch: 1, Follow: true})
		done <- err
	}()
	rcAppend(t, w, 101, 200, 0, 0)
	other := rcSrc
	other.Ino++
	if _, err := w.Begin(other, 1, rcTime(201)); err != nil {
		t.Fatal(err)
	}
	rcAppend(t, w, 1, 10, 0, 0)
	select {
	case err := <-done:
		if err != nil || st.Records != 200 || st.Last != 200 {
			t.Fatalf("Replay: %+v, %v", st, err)
		}
	case <-time.After(rcWait):
		t.Fatal("a following replay went on past its epoch's end")
	}
}
