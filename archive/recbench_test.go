package archive

import (
	"cmp"
	"context"
	"os"
	"testing"
)

// rcTmpfs is a directory in /dev/shm (tmpfs) removed when tb ends: the
// benchmarks measure the archive's code, not a disk. RINGFIRE_BENCH_DIR=DIR
// puts it in DIR instead (a disk's).
func rcTmpfs(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp(cmp.Or(os.Getenv("RINGFIRE_BENCH_DIR"), "/dev/shm"), "archive-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkRecord is the recorder's hot loop: 64-byte records read from
// a ring and appended to an archive in tmpfs (64 MiB segments, sealed
// as they fill), in batches of 1024 that the producer writes first (its
// PushBatch is counted too). One op is one record.
func BenchmarkRecord(b *testing.B) {
	ring := rcShmPath(b)
	p := rcRing(b, ring, 1<<16)
	w := rcOpenWriter(b, rcTmpfs(b), Options{})
	r, err := NewRecorder(w, RecorderConfig{Ring: ring})
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := r.attach(); !ok || err != nil {
		b.Fatalf("attach: %v, %v", ok, err)
	}
	defer r.detach()
	const batch = 1024
	recs := make([]byte, 64*batch)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		k := min(batch, b.N-n)
		if _, err := p.PushBatch(recs[:64*k], 64); err != nil {
			b.Fatal(err)
		}
		for {
			caught, err := r.drain(drainBatch)
			if err != nil {
				b.Fatal(err)
			}
			if caught {
				break
			}
		}
	}
	if err := r.finish(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := r.Stats(); st.Records != uint64(b.N) || st.Gaps != 0 {
		b.Fatalf("stats %+v after %d records", st, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReplay replays an archive of 1 M 64-byte records in tmpfs (a
// warm page cache) into a ring at Speed 0. One op is one record.
func BenchmarkReplay(b *testing.B) {
	const n = 1 << 20
	dir := rcTmpfs(b)
	w := rcOpenWriter(b, dir, Options{SegmentSize: 16 << 20}) // sealed segments, and the last one written
	if _, err := w.Begin(rcSrc, 1, rcTime(1)); err != nil {
		b.Fatal(err)
	}
	rcAppend(b, w, 1, n, 0, 0)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	r := rcOpen(b, dir)
	ring := rcShmPath(b)
	if _, err := Replay(context.Background(), r, ReplayConfig{Ring: ring, Replace: true}); err != nil {
		b.Fatal(err) // a warm-up: the page cache, the ring file
	}
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for done := 0; done < b.N; done += n {
		st, err := Replay(context.Background(), r, ReplayConfig{Ring: ring, Replace: true, To: uint64(min(n, b.N-done))})
		if err != nil || st.Records != uint64(min(n, b.N-done)) {
			b.Fatalf("replay: %+v, %v", st, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
