package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

func TestTop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: 1024, Flags: shm.FlagLossless}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartHead, Name: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		rec := make([]byte, 64)
		for i := 0; i < 500; i++ { // at most half a ring: the idle reader never blocks us
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			synth.Fill(rec, w.Next(), 0)
			if _, err := w.Push(rec); err != nil {
				t.Error(err)
				return
			}
		}
	})
	out := mustRun(t, "top", path, "--iterations", "2", "--interval-ms", "50")
	close(stop)
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("top printed %d lines, want header, column names and 2:\n%s", len(lines), out)
	}
	wantContains(t, "header", lines[0], "64-byte records, capacity 1024; MB/s = payload")
	wantContains(t, "columns", lines[1], "WRITE_SEQ", "MSG/S", "MB/S", "SLOWEST_LAG")
	var moved bool
	for _, ln := range lines[2:] {
		f := strings.Fields(ln)
		if len(f) != 5 {
			t.Fatalf("bad line %q", ln)
		}
		seq, err1 := strconv.ParseUint(f[1], 10, 64)
		rate, err2 := strconv.ParseFloat(f[2], 64)
		lag, err3 := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad line %q", ln)
		}
		if lag != seq { // the idle reader started at 1 and never read
			t.Errorf("slowest lag %d, want write_seq %d: %q", lag, seq, ln)
		}
		moved = moved || rate > 0
	}
	if !moved {
		t.Errorf("top saw no traffic:\n%s", out)
	}
}

func TestTopBlobUntilCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	p, err := shm.NewBlobProducer[uint64](path, shm.BlobOptions{Capacity: 8, ArenaSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"top", path, "--interval-ms", "20"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	wantContains(t, "top", out, "blob ring: arena bytes not counted")
	if n := strings.Count(out, "\n"); n < 3 {
		t.Errorf("top --iterations 0 printed %d lines before the cancel:\n%s", n, out)
	}
	if strings.Contains(out, "  -\n") == false {
		t.Errorf("no slowest lag placeholder without readers:\n%s", out)
	}
}
