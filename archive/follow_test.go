package archive

import (
	"errors"
	"io"
	"runtime"
	"testing"
)

// A cursor reading while another goroutine appends, seals and compresses
// sees every sequence once, in order.
func TestCursorFollowsConcurrently(t *testing.T) {
	for _, c := range []struct {
		compress   bool
		flushEvery uint64
	}{{false, 97}, {true, 97}, {false, 0}, {true, 0}} {
		compress, flushEvery := c.compress, c.flushEvery
		for round := range 8 {
			dir := t.TempDir()
			w := openBegun(t, dir, Options{SegmentSize: 16 << 10, Compress: compress}, 1)
			writeRecords(t, w, 1, 10)
			w.Flush()
			const n = 20000
			done := make(chan error, 1)
			go func() {
				for s := uint64(11); s <= n; s++ {
					if err := w.Append(s, int64(s)*1000, rec(s)); err != nil {
						done <- err
						return
					}
					if flushEvery > 0 && s%flushEvery == 0 {
						w.Flush()
					}
				}
				done <- w.Close()
			}()
			r, _ := Open(dir)
			c, err := r.Seek(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			next := uint64(1)
			for spins := 0; next <= n && spins < 10_000_000; spins++ {
				e, err := c.Next()
				if errors.Is(err, io.EOF) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					t.Fatalf("round %d at %d: %v", round, next, err)
				}
				if e.Seq != next {
					t.Fatalf("compress %v round %d: got %d, want %d", compress, round, e.Seq, next)
				}
				next++
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			c.Close()
			if next != n+1 {
				t.Fatalf("read to %d", next-1)
			}
		}
	}
}
