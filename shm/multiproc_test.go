package shm

// Multi-process tests: one producer process and several reader processes
// attached to one ring in /dev/shm, made by re-executing the test binary
// with env vars selecting the role (mpEnvRole makes TestMain, main_test.go,
// run mpChildMain instead of the tests).
// This file holds the two tests, what they assert of each reader, and the
// child's entry point; mpchild_test.go is the children's side and
// mprun_test.go the parent's.
//
// Handshake (every wait bounded in time):
//  1. the parent starts the producer; it creates the ring, pushes a prefill
//     (lossy test: enough to wrap the ring several times, so the start modes
//     differ) and creates <ring>.created;
//  2. the parent starts the readers; each attaches, records where it starts
//     and creates <ring>.ready.<i>, then starts polling;
//  3. once every reader is ready the parent creates <ring>.go, and only then
//     does the producer push the bulk of the stream, with no pacing. Its
//     final record carries the "last" flag; each reader stops when it has it.
//
// Each process prints one line "MPRESULT <json>" on stdout.

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mpChildMain is the child side of the multi-process tests, run by TestMain
// when mpEnvRole is set; role is its value. It prints the child's result
// line, or returns an error (the child then exits with a non-zero status).
func mpChildMain(role string) error {
	var res any
	var err error
	switch role {
	case "producer":
		res, err = mpProducer()
	case "reader":
		res, err = mpReader()
	case "futex-readonly":
		res, err = mpFutexReadOnly()
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(os.Stdout, "%s%s\n", mpResultPrefix, b)
	return err
}

// TestMultiProcessLapping: one producer and eight reader processes on a
// 64-slot lossy ring, the producer pushing millions of records with no
// pacing, so that readers are lapped continuously. No reader may see a torn
// record, and each reader's Lapped() must account exactly for the records
// it did not see.
func TestMultiProcessLapping(t *testing.T) {
	const capa, prefill = 64, 1000
	final := uint64(3_000_000) // bounded by the producer's 12 s budget too
	if raceDetectorOn() {
		final = 2_000_000
	}
	if testing.Short() {
		final = 300_000
	}
	cfg := mpConfig{
		capacity: capa, prefill: prefill, final: final,
		budget: 12 * time.Second, wallClock: 60 * time.Second,
		readers: []mpReaderSpec{
			{"oldest", "spin"},
			{"latest", "spin"},
			{"head", "futex"},
			{"seq:1", "yield"}, // behind the oldest retained: clamped, counted lapped
			{fmt.Sprintf("seq:%d", prefill-20), "sleepy"},     // inside the retained window
			{fmt.Sprintf("seq:%d", prefill+100_000), "futex"}, // in the future
			{"oldest", "sleepy"},
			{"head", "yield"},
		},
	}
	p, rs := mpRun(t, cfg)
	mpLog(t, p, rs)
	if p.Final == 0 || p.Final <= prefill {
		t.Fatalf("producer final record %d", p.Final)
	}
	var lappedDuringStream uint64
	for _, r := range rs {
		mpCheckReader(t, r, p.Final)
		if r.AttachWrite != prefill {
			t.Errorf("reader %d attached at write_seq %d, want %d (the handshake failed)", r.Index, r.AttachWrite, prefill)
		}
		next, lapped := mpWantStart(r.Start, prefill, capa)
		if r.Next0 != next || r.Lapped0 != lapped {
			t.Errorf("reader %d (%s) starts at %d with %d lapped, want %d with %d lapped", r.Index, r.Start, r.Next0, r.Lapped0, next, lapped)
		}
		lappedDuringStream += r.Lapped - r.Lapped0
	}
	if lappedDuringStream == 0 {
		t.Fatalf("no reader was lapped during the stream: the test proves nothing (shrink the capacity)")
	}
}

// TestMultiProcessLossless: a lossless ring with four registered reader
// processes and 64 slots: the producer waits for the slowest, and every
// reader gets every record 1..N with nothing lapped.
func TestMultiProcessLossless(t *testing.T) {
	final := uint64(100_000)
	if raceDetectorOn() {
		final = 50_000
	}
	if testing.Short() {
		final = 20_000
	}
	cfg := mpConfig{
		capacity: 64, prefill: 0, final: final, lossless: true,
		budget: 10 * time.Second, wallClock: 60 * time.Second,
		readers: []mpReaderSpec{
			{"oldest", "spin"},
			{"head", "futex"},
			{"seq:1", "sleepy"}, // falls behind: the producer must wait for it
			{"latest", "yield"},
		},
	}
	p, rs := mpRun(t, cfg)
	mpLog(t, p, rs)
	if p.ActiveReaders != len(cfg.readers) {
		t.Errorf("producer saw %d live registered readers at the start, want %d", p.ActiveReaders, len(cfg.readers))
	}
	if p.Final == 0 {
		t.Fatal("no final record")
	}
	for _, r := range rs {
		mpCheckReader(t, r, p.Final)
		if r.Next0 != 1 || r.First != 1 || r.Lapped != 0 || r.Missing != 0 || r.Received != p.Final {
			t.Errorf("reader %d (%s, %s) of a lossless ring, registered: start %d first %d received %d lapped %d, "+
				"missing %d in %d gaps (largest %d); want every record 1..%d. Gaps of 1..4 records "+
				"(one TryRecv retries 4 times), far below the capacity, are false laps (TestHeadFollowerNeverSpuriouslyLapped)",
				r.Index, r.Start, r.Wait, r.Next0, r.First, r.Received, r.Lapped, r.Missing, r.Gaps, r.MaxGap, p.Final)
		}
	}
	if p.Backpressure == 0 {
		t.Errorf("the producer never waited for a reader: backpressure was not exercised")
	}
}

// mpCheckReader asserts what holds for every reader, lossy or lossless.
func mpCheckReader(t *testing.T, r mpReaderResult, final uint64) {
	t.Helper()
	name := fmt.Sprintf("reader %d (%s, %s)", r.Index, r.Start, r.Wait)
	if r.Err != "" {
		t.Errorf("%s: %s", name, r.Err)
		return
	}
	if r.Torn != 0 {
		t.Errorf("%s: %d torn records (first: %s)", name, r.Torn, r.TornSample)
	}
	if r.SeqMismatch != 0 || r.OutOfOrder != 0 {
		t.Errorf("%s: %d records whose payload seq differs from the returned seq or Reader.Seq(), %d out of order",
			name, r.SeqMismatch, r.OutOfOrder)
	}
	if r.Received == 0 || r.Received != r.RdReceived {
		t.Errorf("%s: received %d, Reader.Received() %d", name, r.Received, r.RdReceived)
	}
	if r.Last != final {
		t.Errorf("%s: last record %d, want the final record %d", name, r.Last, final)
	}
	// Exact accounting: every sequence from the start position to the
	// first record, and every gap between two consecutive records, was
	// counted in Lapped — and nothing else was.
	if got := r.Lapped0 + (r.First - r.Next0) + r.Missing; got != r.Lapped {
		t.Errorf("%s: lapped at attach %d + skipped before the first record (%d - %d) + Σ(jump-1) %d = %d, but Lapped() = %d",
			name, r.Lapped0, r.First, r.Next0, r.Missing, got, r.Lapped)
	}
	if r.First < r.Next0 {
		t.Errorf("%s: first record %d is before the start position %d", name, r.First, r.Next0)
	}
	// Equivalently: each sequence in [Next0, final] was received or lapped.
	if r.Received+(r.Lapped-r.Lapped0) != final-r.Next0+1 {
		t.Errorf("%s: received %d + lapped since attach %d != %d sequences in [%d, %d]",
			name, r.Received, r.Lapped-r.Lapped0, final-r.Next0+1, r.Next0, final)
	}
}

// mpWantStart is where a reader attached at write_seq w of a ring of
// capacity capa must start, and what it counts as lapped at attach.
func mpWantStart(start string, w, capa uint64) (next, lapped uint64) {
	oldest := uint64(1)
	if w >= capa {
		oldest = w - capa + 1
	}
	switch {
	case start == "oldest":
		return oldest, 0
	case start == "latest":
		return max(w, 1), 0
	case start == "head":
		return w + 1, 0
	default:
		n, _ := strconv.ParseUint(strings.TrimPrefix(start, "seq:"), 10, 64)
		n = max(n, 1)
		if n < oldest {
			return oldest, oldest - n
		}
		return n, 0
	}
}

func mpLog(t *testing.T, p mpProducerResult, rs []mpReaderResult) {
	t.Helper()
	t.Logf("producer: final %d, pushed %d after go in %d ms (budget hit %v), backpressure %d, race %v",
		p.Final, p.Pushed, p.ElapsedMs, p.BudgetHit, p.Backpressure, raceDetectorOn())
	for _, r := range rs {
		t.Logf("reader %d %-12s %-6s start %d (lapped %d at attach): first %d last %d received %d lapped %d missing %d in %d gaps (largest %d) torn %d sleeps %d",
			r.Index, r.Start, r.Wait, r.Next0, r.Lapped0, r.First, r.Last, r.Received, r.Lapped, r.Missing, r.Gaps, r.MaxGap, r.Torn, r.Sleeps)
	}
}
