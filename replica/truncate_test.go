package replica_test

// A ring file cut under a server or a mirror (truncated by another
// process): an error of that ring naming the file, not a SIGBUS that
// kills the process (the test binary, here).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

var cutFractions = []struct {
	name string
	frac float64
}{{"to-zero", 0}, {"to-half", 0.5}}

// cutFile truncates the file at path to its size times frac.
func cutFile(t *testing.T, path string, frac float64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(st.Size())*frac)); err != nil {
		t.Fatal(err)
	}
}

// wantCut checks that err reports the ring at path cut under its mapping.
func wantCut(t *testing.T, err error, path string) {
	t.Helper()
	if !errors.Is(err, shm.ErrTruncated) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v, want an error wrapping shm.ErrTruncated naming %s", err, path)
	}
}

// TestServeRingCut: Serve ends with ErrRingTruncated, naming the file,
// when its ring is cut, whether a goroutine of it touched a lost page (a
// mirror catching up from the oldest record reads the lost half) or the
// ring watcher saw the shorter file first. The process lives on.
func TestServeRingCut(t *testing.T) {
	for _, c := range cutFractions {
		t.Run(c.name, func(t *testing.T) {
			p, src := pairSource(t, 1024)
			src.push(1024)
			src.serve(replica.ServerConfig{})
			cutFile(t, src.path, c.frac)
			mr := newMirrorOf(t, src, p.BAddr, replica.MirrorConfig{Ring: filepath.Join(t.TempDir(), "mirror"),
				From: replica.From{Mode: replica.FromOldest}, Reconnect: 50 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			done := p.B.Go(func() { mr.Run(ctx) })
			defer func() { cancel(); <-done; mr.Close() }()
			select {
			case err := <-src.done:
				if !errors.Is(err, replica.ErrRingTruncated) {
					t.Fatalf("Serve returned %v, want ErrRingTruncated", err)
				}
				wantCut(t, err, src.path)
				src.done <- nil // for the cleanup's close
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not notice the cut ring")
			}
		})
	}
}

// TestMirrorRingCut: a mirror whose own ring is cut ends Run with the
// error naming the file; the next Run creates a fresh ring at the path
// and mirrors into it.
func TestMirrorRingCut(t *testing.T) {
	for _, c := range cutFractions {
		t.Run(c.name, func(t *testing.T) {
			p, src := pairSource(t, 1024)
			src.serve(replica.ServerConfig{})
			path := filepath.Join(t.TempDir(), "mirror")
			m := newMirrorOf(t, src, p.BAddr, replica.MirrorConfig{Ring: path, Reconnect: 50 * time.Millisecond})
			defer m.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			run := func() (<-chan struct{}, *error) {
				var err error
				return p.B.Go(func() { err = m.Run(ctx) }), &err
			}
			done, errp := run()
			waitNext := func(seq uint64) {
				t.Helper()
				if !poll(10*time.Second, time.Millisecond, func() bool { return m.Stats().Next > seq }) {
					t.Fatalf("mirror stuck at %d waiting for %d", m.Stats().Next, seq)
				}
			}
			testWait(t, "the mirror connected", func() bool { return m.Stats().Connects > 0 })
			src.push(100)
			waitNext(100)
			cutFile(t, path, c.frac)
			// Until the mirror's writes reach a lost page (the second half
			// of a 1024-slot ring: a lap at most).
			for i := 0; ; i++ {
				src.push(64)
				select {
				case <-done:
				case <-time.After(5 * time.Millisecond):
					if i < 1000 {
						continue
					}
					t.Fatal("the mirror's Run did not end after its ring was cut")
				}
				break
			}
			wantCut(t, *errp, path)
			if got := m.Stats().RingCuts; got != 1 {
				t.Fatalf("RingCuts %d after the cut, want 1", got)
			}
			resets := m.Stats().Resets
			done, errp = run()
			next := src.w.Next()
			src.push(100)
			waitNext(next + 99)
			if m.Stats().Resets != resets+1 {
				t.Fatalf("Resets %d after the second Run, want %d (a fresh ring)", m.Stats().Resets, resets+1)
			}
			r, err := shm.Open(path, shm.OpenOptions{})
			if err != nil {
				t.Fatalf("the fresh mirror ring: %v", err)
			}
			r.Close()
			cancel()
			<-done
			if *errp != nil {
				t.Fatalf("the second Run: %v", *errp)
			}
		})
	}
}

// testWait polls cond every millisecond for up to 10 s.
func testWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(10*time.Second, time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
