package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

func TestTailValidates(t *testing.T) {
	// 45-byte records live in 48-byte slot payloads: the padding must check.
	path := genRing(t, "--count", "50", "--capacity", "64", "--size", "45")
	out := mustRun(t, "tail", path, "--from", "oldest", "--count", "50", "--quiet")
	wantContains(t, "tail", out, "received 50, lapped 0, gaps 0, checksum errors 0, sequence errors 0 (seq 1..50)")
	if strings.Contains(out, "ok, age") {
		t.Errorf("--quiet printed records:\n%s", out)
	}
	out = mustRun(t, "tail", path, "--from", "10", "--count", "3")
	wantContains(t, "tail --from 10", out, "seq 10 ok", "seq 12 ok", "received 3,", "(seq 10..12)")
	out = mustRun(t, "tail", path, "--count", "1")
	wantContains(t, "tail --from latest", out, "seq 50 ok", "received 1,")
}

// Records overwritten before tail attached were never tail's to read: not
// lapped, but told apart as where it started.
func TestTailGoneBeforeAttach(t *testing.T) {
	path := genRing(t, "--count", "40", "--capacity", "16")
	out := mustRun(t, "tail", path, "--from", "1", "--count", "16", "--quiet")
	wantContains(t, "tail", out, "received 16, lapped 0, gaps 0, checksum errors 0",
		"(seq 25..40); started at seq 25: seq 1..24 were not in the ring when tail attached\n")
	if strings.Contains(out, "latency") {
		t.Errorf("tail measured latency on records written before it attached:\n%s", out)
	}
}

func TestTailTimeoutAndCancel(t *testing.T) {
	path := genRing(t, "--count", "5", "--capacity", "8")
	start := time.Now()
	out := mustRun(t, "tail", path, "--from", "oldest", "--timeout", "100ms", "--quiet")
	wantContains(t, "tail --timeout", out, "received 5, lapped 0, gaps 0, checksum errors 0", "stopped after 100ms without a record")
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
		t.Errorf("tail --timeout 100ms took %v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"tail", path, "--from", "head"}, &stdout, &stderr); err != nil {
		t.Fatalf("cancelled tail: %v", err)
	}
	wantContains(t, "cancelled tail", stdout.String(), "received 0, lapped 0")
}

// corruptByte flips one payload byte of record seq through the file.
func corruptByte(t *testing.T, path string, seq uint64, at int) {
	t.Helper()
	r, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := r.Layout()
	r.Close()
	off := int64(l.SlotsOffset + (seq&(l.Capacity-1))*uint64(l.ElementSize) + 8 + uint64(at))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func TestTailDetectsCorruption(t *testing.T) {
	path := genRing(t, "--count", "20", "--capacity", "32")
	corruptByte(t, path, 7, 30)
	stdout, stderr, err := runCmd(t, "tail", path, "--from", "oldest", "--count", "20", "--quiet")
	if err == nil {
		t.Fatalf("tail accepted a corrupted record:\n%s", stdout)
	}
	wantContains(t, "error", err.Error(), "checksum")
	wantContains(t, "stdout", stdout, "received 20, lapped 0, gaps 0, checksum errors 1, sequence errors 0")
	wantContains(t, "stderr", stderr, "seq 7: synth: checksum mismatch")
	var buf bytes.Buffer
	if code := exitCode(err, &buf); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestTailSequenceMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: 8}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 64)
	for _, embedded := range []uint64{1, 2, 9, 4} { // record 3 claims to be 9
		synth.Fill(rec, embedded, 0)
		if _, err := w.Push(rec); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	stdout, stderr, err := runCmd(t, "tail", path, "--from", "oldest", "--count", "4", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "1 sequence mismatches") {
		t.Fatalf("err %v, want a sequence mismatch\n%s", err, stdout)
	}
	wantContains(t, "stderr", stderr, "seq 3: record carries sequence 9")
}

func TestTailGapsCounted(t *testing.T) {
	tl := &tailer{quiet: true, errOut: &bytes.Buffer{}}
	rec := make([]byte, 64)
	for _, seq := range []uint64{5, 6, 9, 10, 20} {
		synth.Fill(rec, seq, 0)
		tl.check(seq, rec)
	}
	if tl.received != 5 || tl.gaps != 2 || tl.badSum+tl.badSeq != 0 || tl.first != 5 || tl.last != 20 {
		t.Fatalf("tailer %+v", tl)
	}
}

func TestTailNotSynthetic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 16, Capacity: 8}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, _, err = runCmd(t, "tail", path, "--timeout", "10ms")
	if err == nil || !strings.Contains(err.Error(), "cannot hold synthetic records") {
		t.Fatalf("err %v", err)
	}
}

func TestGenRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	start := time.Now()
	out := mustRun(t, "gen", path, "--rate", "2000", "--count", "200", "--capacity", "256")
	if d := time.Since(start); d < 90*time.Millisecond || d > 5*time.Second {
		t.Errorf("200 records at 2000/s took %v", d)
	}
	m := regexp.MustCompile(`wrote 200 records to .* in [0-9.]+s: ([0-9]+) records/s, [0-9.]+ MB/s \(write_seq 200\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("gen output: %s", out)
	}
	wantContains(t, "tail", mustRun(t, "tail", path, "--from", "oldest", "--count", "200", "--quiet"),
		"received 200, lapped 0, gaps 0, checksum errors 0")
}

func TestGenUntilCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"gen", path, "--rate", "1000", "--capacity", "64"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`wrote ([0-9]+) records`).FindStringSubmatch(stdout.String())
	if m == nil || m[1] == "0" {
		t.Fatalf("gen output: %q", stdout.String())
	}
}

func TestGenExisting(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("not a ring"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCmd(t, "gen", other, "--count", "1")
	if !errors.Is(err, shm.ErrGeometry) {
		t.Fatalf("gen over a non-ring file: %v", err)
	}
	mustRun(t, "gen", other, "--count", "1", "--replace")
	held := filepath.Join(dir, "held")
	w, err := shm.Create(held, shm.RingConfig{PayloadSize: 64, Capacity: 4096}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, _, err = runCmd(t, "gen", held, "--count", "1")
	if !errors.Is(err, shm.ErrLocked) {
		t.Fatalf("gen over a held ring: %v", err)
	}
}

// A lossless gen blocked on a reader that never reads still stops when
// cancelled.
func TestGenLosslessCancelWhileBlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"gen", path, "--lossless", "--capacity", "8", "--rate", "2000"}, &stdout, &stderr)
	}()
	var rd *shm.Reader
	for deadline := time.Now().Add(5 * time.Second); rd == nil; {
		var err error
		if rd, err = shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, Name: "stuck"}); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("ring never appeared: %v", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	defer rd.Close()
	// The writer stops once it is a full ring ahead of the reader's cursor
	// (up to half a ring later when its cached gate predates the reader).
	next := rd.Next()
	last := rd.Ring().WriteSeq()
	for deadline := time.Now().Add(5 * time.Second); ; last = rd.Ring().WriteSeq() {
		time.Sleep(30 * time.Millisecond)
		if w := rd.Ring().WriteSeq(); w == last && w >= next+7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gen never blocked: write_seq %d, reader at %d", rd.Ring().WriteSeq(), next)
		}
	}
	if last > next+7+4 {
		t.Fatalf("lossless gen overran the reader: write_seq %d, reader at %d", last, next)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("gen did not stop when cancelled")
	}
	wantContains(t, "gen", stdout.String(), "wrote ")
}

// TestTailFollowsReplacedRing: a ring created afresh at tail's path (a
// restarted producer, a mirror's fresh ring) is noticed and reattached;
// the new ring's records are read and validated.
func TestTailFollowsReplacedRing(t *testing.T) {
	// Lossless rings have a reader registry: the test sees tail's cursor.
	path := genRing(t, "--count", "100", "--capacity", "1024", "--lossless")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"tail", path, "--from", "oldest", "--quiet", "--count", "150"}, &stdout, &stderr)
	}()
	old, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	testenv.Until(t, 10*time.Second, "tail reading the first ring to its end", func() bool {
		rs, err := old.Readers()
		return err == nil && len(rs) == 1 && rs[0].Cursor == 101
	})
	mustRun(t, "gen", path, "--count", "50", "--capacity", "1024", "--lossless")
	if err := <-done; err != nil {
		t.Fatalf("tail: %v\n%s", err, stderr.String())
	}
	wantContains(t, "tail", stdout.String(), "received 150,", "checksum errors 0, sequence errors 0", "rings replaced and reattached 1")
	wantContains(t, "tail's stderr", stderr.String(), "was replaced")
}
