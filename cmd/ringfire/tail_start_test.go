package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// sparseRing creates a sparse ring, as a mirror's, holding synthetic
// records at the given sequences (in order) stamped now, published.
func sparseRing(t *testing.T, seqs ...uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: 1024, Flags: shm.FlagSparse}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	storeSynth(t, w, seqs...)
	return path
}

func storeSynth(t *testing.T, w *shm.Writer, seqs ...uint64) {
	t.Helper()
	rec := make([]byte, 64)
	for _, s := range seqs {
		synth.Fill(rec, s, uint64(time.Now().UnixNano()))
		if err := w.Store(s, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Publish(seqs[len(seqs)-1]); err != nil {
		t.Fatal(err)
	}
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// A mirror ring that began at the source's latest record holds nothing
// below it: tail --from oldest (4077, a ring's capacity below write_seq)
// starts at its first record and has lost nothing. A hole after that
// start (a mirror's gap) is still lost.
func TestTailSparseRingStart(t *testing.T) {
	path := sparseRing(t, seqRange(5001, 5100)...)
	out := mustRun(t, "tail", path, "--from", "oldest", "--count", "100", "--quiet")
	wantContains(t, "tail", out, "received 100, lapped 0, gaps 0, checksum errors 0, sequence errors 0 (seq 5001..5100); "+
		"started at seq 5001: seq 4077..5000 were not in the ring when tail attached\n")

	path = sparseRing(t, append(seqRange(5001, 5050), seqRange(5061, 5100)...)...)
	out = mustRun(t, "tail", path, "--from", "oldest", "--count", "90", "--quiet")
	wantContains(t, "tail of a ring with a hole", out, "received 90, lapped 10, gaps 1, checksum errors 0", "(seq 5001..5100); started at seq 5001")
}

// tail attached to an empty mirror ring, as the demo's is, starts where
// the mirror's first record lands, and measures the latency of the
// records it reads live.
func TestTailAttachedBeforeFirstRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: 1024, Flags: shm.FlagSparse, Readers: 2}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"tail", path, "--from", "oldest", "--count", "50", "--quiet"}, &stdout, &stderr)
	}()
	testenv.Until(t, 10*time.Second, "tail registered", func() bool {
		rs, err := w.Ring().Readers()
		return err == nil && len(rs) == 1
	})
	storeSynth(t, w, seqRange(9001, 9050)...)
	if err := <-done; err != nil {
		t.Fatalf("tail: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	wantContains(t, "tail", out, "received 50, lapped 0, gaps 0, checksum errors 0, sequence errors 0 (seq 9001..9050); "+
		"started at seq 9001: seq 1..9000 were not in the ring when tail attached; latency from gen's stamp p50 ",
		"(50 records read live)")
	m := regexp.MustCompile(`p99 ([^,]+), max ([^ ]+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no latency in %q", out)
	}
	for _, v := range m[1:] {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 || d > 10*time.Second {
			t.Errorf("latency %q: %v", v, err)
		}
	}
}

// A reader the producer laps after it started loses those records, and
// tail counts them as lapped.
func TestTailLappedAfterStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: 16}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	storeSynth(t, w, seqRange(1, 10)...)
	var stdout, stderr bytes.Buffer
	tl := newTailer(&stdout, &stderr)
	tl.quiet, tl.count = true, 5
	wait := shm.FutexWait(64)
	if err := tl.open(path, shm.ReadOptions{Start: shm.StartOldest}, &wait); err != nil {
		t.Fatal(err)
	}
	tl.begin(true)
	defer func() { tl.rd.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tl.loop(ctx); err != nil || tl.received != 5 {
		t.Fatalf("first 5 records: %d, %v", tl.received, err)
	}
	// 11..50 overwrite 6..34 before tail reads them.
	storeSynth(t, w, seqRange(11, 50)...)
	tl.count = 5 + 16
	if err := tl.loop(ctx); err != nil {
		t.Fatal(err)
	}
	tl.summary()
	tl.out.Flush()
	out := stdout.String()
	wantContains(t, "tail", out, "received 21, lapped 29, gaps 1, checksum errors 0, sequence errors 0 (seq 1..50)")
	if strings.Contains(out, "started at") {
		t.Errorf("tail started at the ring's first record, yet says otherwise:\n%s", out)
	}
}
