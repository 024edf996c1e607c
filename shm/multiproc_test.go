package shm

// Multi-process tests: one producer process and several reader processes
// attached to one ring in /dev/shm, made by re-executing the test binary
// with -test.run=^TestMultiProcHelper$ and env vars selecting the role.
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
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	mpEnvRole     = "RINGFIRE_MP_ROLE" // "producer" or "reader"
	mpEnvRing     = "RINGFIRE_MP_RING"
	mpEnvCap      = "RINGFIRE_MP_CAP"
	mpEnvPrefill  = "RINGFIRE_MP_PREFILL"
	mpEnvCount    = "RINGFIRE_MP_COUNT" // final sequence number
	mpEnvBudget   = "RINGFIRE_MP_BUDGET_MS"
	mpEnvLossless = "RINGFIRE_MP_LOSSLESS"
	mpEnvIndex    = "RINGFIRE_MP_INDEX"
	mpEnvStart    = "RINGFIRE_MP_START" // oldest | latest | head | seq:N
	mpEnvWait     = "RINGFIRE_MP_WAIT"  // spin | yield | futex | sleepy

	mpResultPrefix = "MPRESULT "
	mpFlagLast     = 1
	mpPayload      = 56
)

// Record layout (56-byte payload, 64-byte slot):
//
//	seq u64 @0 | flags u64 @8 (bit 0: last record) | checksum u64 @16
//	filler [4]u64 @24, filler[k] = mpFill(seq, k)
//
// The checksum covers every byte but itself, so a record stitched from two
// writes fails it (and the filler, derived from the sequence, fails too).
func mpFill(seq uint64, k int) uint64 {
	z := seq*4 + uint64(k) + 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func mpSum(p []byte) uint64 {
	h := uint64(14695981039346656037)
	for i, c := range p[:mpPayload] {
		if i >= 16 && i < 24 {
			continue
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func mpEncode(p []byte, seq, flags uint64) {
	le := binary.LittleEndian
	le.PutUint64(p[0:], seq)
	le.PutUint64(p[8:], flags)
	for k := range 4 {
		le.PutUint64(p[24+8*k:], mpFill(seq, k))
	}
	le.PutUint64(p[16:], mpSum(p))
}

// mpCheck reports whether p is a whole record, and its sequence and flags.
func mpCheck(p []byte) (seq, flags uint64, ok bool) {
	le := binary.LittleEndian
	seq, flags = le.Uint64(p[0:]), le.Uint64(p[8:])
	if le.Uint64(p[16:]) != mpSum(p) || flags&^mpFlagLast != 0 {
		return seq, flags, false
	}
	for k := range 4 {
		if le.Uint64(p[24+8*k:]) != mpFill(seq, k) {
			return seq, flags, false
		}
	}
	return seq, flags, true
}

type mpProducerResult struct {
	Final         uint64 // sequence of the record with the last flag
	Pushed        uint64 // records pushed after the go signal
	ElapsedMs     int64
	BudgetHit     bool
	Backpressure  uint64
	ActiveReaders int // live registered readers seen at the go signal
	Err           string
}

type mpReaderResult struct {
	Index       int
	Start       string
	Wait        string
	Requested   uint64 // ReadOptions.Sequence for seq:N
	AttachWrite uint64 // write_seq when the reader attached
	Next0       uint64 // Reader.Next() right after attaching
	Lapped0     uint64 // Reader.Lapped() right after attaching
	First, Last uint64
	Received    uint64 // records this loop got
	RdReceived  uint64 // Reader.Received()
	Missing     uint64 // Σ (jump − 1) between consecutive records
	Gaps        uint64 // how many jumps > 1
	MaxGap      uint64 // largest jump − 1
	Lapped      uint64 // Reader.Lapped() at the end
	Torn        uint64 // checksum or filler mismatch
	TornSample  string
	SeqMismatch uint64 // payload seq != returned seq or != Reader.Seq()
	OutOfOrder  uint64
	Sleeps      int
	Err         string
}

// TestMultiProcHelper is the child side of the multi-process tests; it does
// nothing unless started by them.
func TestMultiProcHelper(t *testing.T) {
	role := os.Getenv(mpEnvRole)
	if role == "" {
		t.Skip("helper process for TestMultiProcess*: runs only when re-executed with " + mpEnvRole)
	}
	var res any
	switch role {
	case "producer":
		res = mpProducer(t)
	case "reader":
		res = mpReader(t)
	case "futex-readonly":
		res = mpFutexReadOnly(t)
	default:
		t.Fatalf("unknown role %q", role)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "%s%s\n", mpResultPrefix, b)
}

func mpEnvU64(t *testing.T, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(os.Getenv(name), 10, 64)
	if err != nil {
		t.Fatalf("env %s: %v", name, err)
	}
	return v
}

func mpWaitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func mpTouch(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func mpProducer(t *testing.T) mpProducerResult {
	ring := os.Getenv(mpEnvRing)
	capa := mpEnvU64(t, mpEnvCap)
	prefill := mpEnvU64(t, mpEnvPrefill)
	final := mpEnvU64(t, mpEnvCount)
	budget := time.Duration(mpEnvU64(t, mpEnvBudget)) * time.Millisecond
	lossless := os.Getenv(mpEnvLossless) == "1"

	cfg := RingConfig{PayloadSize: mpPayload, Capacity: capa}
	if lossless {
		cfg.Flags |= FlagLossless
	}
	w, err := Create(ring, cfg, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := make([]byte, mpPayload)
	for seq := uint64(1); seq <= prefill; seq++ {
		mpEncode(p, seq, 0)
		if _, err := w.Push(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := mpTouch(ring + ".created"); err != nil {
		t.Fatal(err)
	}
	var res mpProducerResult
	if err := mpWaitFile(ring+".go", 60*time.Second); err != nil {
		res.Err = err.Error()
		return res
	}
	if lossless {
		rs, err := w.Ring().Readers()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Active && r.Alive {
				res.ActiveReaders++
			}
		}
	}
	start := time.Now()
	deadline := start.Add(budget)
	for seq := prefill + 1; seq <= final; seq++ {
		var flags uint64
		if seq == final {
			flags = mpFlagLast
		} else if seq&1023 == 0 && time.Now().After(deadline) {
			flags = mpFlagLast // out of time: end the stream here
			res.BudgetHit = true
		}
		mpEncode(p, seq, flags)
		got, err := w.Push(p)
		if err != nil || got != seq {
			res.Err = fmt.Sprintf("push %d: got %d, %v", seq, got, err)
			return res
		}
		res.Pushed++
		if flags&mpFlagLast != 0 {
			res.Final = seq
			break
		}
	}
	res.ElapsedMs = time.Since(start).Milliseconds()
	res.Backpressure = w.Stats().Backpressure
	return res
}

func mpReader(t *testing.T) mpReaderResult {
	ring := os.Getenv(mpEnvRing)
	lossless := os.Getenv(mpEnvLossless) == "1"
	idx := int(mpEnvU64(t, mpEnvIndex))
	res := mpReaderResult{Index: idx, Start: os.Getenv(mpEnvStart), Wait: os.Getenv(mpEnvWait)}

	// Lossy-ring readers do not register (that ring has no registry anyway).
	opts := ReadOptions{Name: fmt.Sprintf("mp-reader-%d", idx), NoRegister: !lossless}
	switch s := res.Start; {
	case s == "oldest":
		opts.Start = StartOldest
	case s == "latest":
		opts.Start = StartLatest
	case s == "head":
		opts.Start = StartHead
	case strings.HasPrefix(s, "seq:"):
		n, err := strconv.ParseUint(s[4:], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		opts.Start, opts.Sequence, res.Requested = StartSequence, n, n
	default:
		t.Fatalf("start %q", s)
	}
	var ws WaitStrategy
	switch res.Wait {
	case "spin", "sleepy":
		ws = BusySpin()
	case "yield":
		ws = SpinYield(64)
	case "futex":
		ws = FutexWait(64)
	default:
		t.Fatalf("wait %q", res.Wait)
	}
	opts.Wait = &ws
	rd, err := OpenReader(ring, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if lossless && !rd.Registered() {
		t.Fatal("reader of a lossless ring did not register")
	}
	res.AttachWrite = rd.Ring().WriteSeq()
	res.Next0, res.Lapped0 = rd.Next(), rd.Lapped()
	if err := mpTouch(fmt.Sprintf("%s.ready.%d", ring, idx)); err != nil {
		t.Fatal(err)
	}

	buf := make([]byte, mpPayload)
	var prev uint64
	for {
		seq, ok := rd.TryRecv(buf)
		if !ok {
			// Nothing new: block (with this reader's strategy) for at most
			// a generous idle timeout: the producer's last record ends the
			// loop long before unless the producer died.
			seq, err = rd.Recv(buf, 20*time.Second)
			if err != nil {
				res.Err = fmt.Sprintf("recv after seq %d: %v", prev, err)
				break
			}
		}
		pseq, flags, whole := mpCheck(buf)
		if !whole {
			res.Torn++
			if res.TornSample == "" {
				res.TornSample = fmt.Sprintf("seq %d: % x", seq, buf)
			}
		}
		if pseq != seq || seq != rd.Seq() {
			res.SeqMismatch++
		}
		if res.Received == 0 {
			res.First = seq
		} else if seq <= prev {
			res.OutOfOrder++
		} else if gap := seq - prev - 1; gap > 0 {
			res.Missing += gap
			res.Gaps++
			res.MaxGap = max(res.MaxGap, gap)
		}
		prev = seq
		res.Received++
		if res.Wait == "sleepy" && res.Received%512 == 0 {
			time.Sleep(200 * time.Microsecond) // fall behind: get lapped
			res.Sleeps++
		}
		if whole && flags&mpFlagLast != 0 {
			break
		}
	}
	res.Last = prev
	res.Lapped = rd.Lapped()
	res.RdReceived = rd.Received()
	return res
}

// mpRaceEnabled reports whether the test binary was built with -race.
func mpRaceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

type mpReaderSpec struct {
	start, wait string
}

type mpConfig struct {
	capacity  uint64
	prefill   uint64
	final     uint64
	budget    time.Duration
	lossless  bool
	readers   []mpReaderSpec
	wallClock time.Duration // the whole run, processes killed after it
}

type mpProc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

func (p *mpProc) output() string {
	return fmt.Sprintf("--- %s stdout:\n%s\n--- %s stderr:\n%s", p.name, p.stdout.String(), p.name, p.stderr.String())
}

func (p *mpProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

var mpCounter atomic.Uint64

func mpRun(t *testing.T, cfg mpConfig) (mpProducerResult, []mpReaderResult) {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skipf("no /dev/shm on this machine (%v)", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ring := fmt.Sprintf("/dev/shm/ringfire-mptest-%d-%d-%d", os.Getpid(), mpCounter.Add(1), time.Now().UnixNano())
	t.Cleanup(func() {
		os.Remove(ring)
		files, _ := filepath.Glob(ring + ".*")
		for _, f := range files {
			os.Remove(f)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), cfg.wallClock)
	defer cancel()

	var procs []*mpProc
	t.Cleanup(func() { // never leave a child behind
		for _, p := range procs {
			if !p.exited() {
				p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
	lossless := "0"
	if cfg.lossless {
		lossless = "1"
	}
	start := func(name string, env ...string) *mpProc {
		p := &mpProc{name: name, done: make(chan struct{})}
		p.cmd = exec.CommandContext(ctx, exe, "-test.run=^TestMultiProcHelper$", "-test.count=1",
			"-test.timeout="+(cfg.wallClock+10*time.Second).String())
		p.cmd.Env = append(os.Environ(),
			mpEnvRing+"="+ring,
			mpEnvCap+"="+strconv.FormatUint(cfg.capacity, 10),
			mpEnvPrefill+"="+strconv.FormatUint(cfg.prefill, 10),
			mpEnvCount+"="+strconv.FormatUint(cfg.final, 10),
			mpEnvBudget+"="+strconv.FormatInt(cfg.budget.Milliseconds(), 10),
			mpEnvLossless+"="+lossless)
		p.cmd.Env = append(p.cmd.Env, env...)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		procs = append(procs, p)
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		return p
	}
	// waitFor polls until path exists, failing if any process exits first
	// or the wall clock runs out.
	waitFor := func(path string) {
		t.Helper()
		for {
			if _, err := os.Stat(path); err == nil {
				return
			}
			for _, p := range procs {
				if p.exited() {
					t.Fatalf("%s exited (%v) before %s appeared\n%s", p.name, p.err, path, p.output())
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", path)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	prod := start("producer", mpEnvRole+"=producer")
	waitFor(ring + ".created")
	readers := make([]*mpProc, len(cfg.readers))
	for i, rs := range cfg.readers {
		readers[i] = start(fmt.Sprintf("reader %d (%s, %s)", i, rs.start, rs.wait),
			mpEnvRole+"=reader", mpEnvIndex+"="+strconv.Itoa(i), mpEnvStart+"="+rs.start, mpEnvWait+"="+rs.wait)
	}
	for i := range readers {
		waitFor(fmt.Sprintf("%s.ready.%d", ring, i))
	}
	if err := mpTouch(ring + ".go"); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		<-p.done
		if p.err != nil {
			t.Fatalf("%s failed: %v (wall clock %v)\n%s", p.name, p.err, cfg.wallClock, p.output())
		}
	}

	var pres mpProducerResult
	mpParse(t, prod, &pres)
	if pres.Err != "" {
		t.Fatalf("producer: %s", pres.Err)
	}
	rres := make([]mpReaderResult, len(readers))
	for i, p := range readers {
		mpParse(t, p, &rres[i])
	}
	return pres, rres
}

func mpParse(t *testing.T, p *mpProc, v any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(p.stdout.Bytes()))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), mpResultPrefix); ok {
			if err := json.Unmarshal([]byte(line), v); err != nil {
				t.Fatalf("%s: bad result %q: %v", p.name, line, err)
			}
			return
		}
	}
	t.Fatalf("%s printed no result\n%s", p.name, p.output())
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
		p.Final, p.Pushed, p.ElapsedMs, p.BudgetHit, p.Backpressure, mpRaceEnabled())
	for _, r := range rs {
		t.Logf("reader %d %-12s %-6s start %d (lapped %d at attach): first %d last %d received %d lapped %d missing %d in %d gaps (largest %d) torn %d sleeps %d",
			r.Index, r.Start, r.Wait, r.Next0, r.Lapped0, r.First, r.Last, r.Received, r.Lapped, r.Missing, r.Gaps, r.MaxGap, r.Torn, r.Sleeps)
	}
}

// TestMultiProcessLapping: one producer and eight reader processes on a
// 64-slot lossy ring, the producer pushing millions of records with no
// pacing, so that readers are lapped continuously. No reader may see a torn
// record, and each reader's Lapped() must account exactly for the records
// it did not see.
func TestMultiProcessLapping(t *testing.T) {
	const capa, prefill = 64, 1000
	final := uint64(3_000_000) // bounded by the producer's 12 s budget too
	if mpRaceEnabled() {
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
	if mpRaceEnabled() {
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

// TestHeadFollowerNeverSpuriouslyLapped: a reader that keeps up with the
// producer of a ring that never wraps (capacity 2^20 > records pushed, so
// no slot is ever overwritten) can never legitimately be lapped. compat.md
// §1: "s1 == u64::MAX or s1 < c: nothing yet". Regression test: the reader
// used to take a slot marked u64::MAX for an overwritten one when write_seq
// >= c, with write_seq loaded after the slot, so a record the producer
// completed between the two loads was skipped and counted lapped (thousands
// of times per million records on 2 cores, before commit febf503). Up to 3
// rounds, failing on the first that shows it.
func TestHeadFollowerNeverSpuriouslyLapped(t *testing.T) {
	n := uint64(mpNeverWrapCap - 1)
	if testing.Short() {
		n = 1 << 18
	}
	for round := 1; round <= 3; round++ {
		received, lapped, jumps := mpHeadFollowerRound(t, n)
		if lapped != 0 || received != n {
			t.Fatalf("round %d: a reader of a ring that never wrapped received %d of %d records, lapped %d (jumps %v): "+
				"a record being written (slot = u64::MAX) was taken for an overwritten one: after loading write_seq "+
				"the reader must look at the slot again before calling it a lap", round, received, n, lapped, jumps)
		}
	}
}

const mpNeverWrapCap = 1 << 20

// mpNeverWrapRing creates a ring of 8-byte records that the test never wraps.
func mpNeverWrapRing(t *testing.T) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring")
	w, err := Create(path, RingConfig{PayloadSize: 8, Capacity: mpNeverWrapCap}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, path
}

func mpPushSeqs(t *testing.T, w *Writer, n uint64) {
	t.Helper()
	p := make([]byte, 8)
	for seq := uint64(1); seq <= n; seq++ {
		binary.LittleEndian.PutUint64(p, seq)
		if _, err := w.Push(p); err != nil {
			t.Fatal(err)
		}
	}
}

func mpHeadFollowerRound(t *testing.T, n uint64) (received, lapped uint64, jumps []string) {
	w, path := mpNeverWrapRing(t)
	defer w.Close()
	rd, err := OpenReader(path, ReadOptions{Start: StartHead, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 8)
		var prev uint64
		deadline := time.Now().Add(60 * time.Second)
		for prev < n {
			seq, ok := rd.TryRecv(buf)
			if !ok {
				if time.Now().After(deadline) {
					errc <- fmt.Errorf("reader stuck after %d", prev)
					return
				}
				continue
			}
			if got := binary.LittleEndian.Uint64(buf); got != seq {
				errc <- fmt.Errorf("record %d holds %d", seq, got)
				return
			}
			if seq != prev+1 && len(jumps) < 5 {
				jumps = append(jumps, fmt.Sprintf("%d->%d", prev, seq))
			}
			prev = seq
		}
		errc <- nil
	}()
	mpPushSeqs(t, w, n)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return rd.Received(), rd.Lapped(), jumps
}

// TestReadSlotBeingWrittenIsNotOverwritten: on a ring that never wraps
// nothing is ever overwritten and there are no holes, so the raw slot API
// must answer NotYet or Ready for the record the producer is writing.
// Regression test: ReadSlot used to load write_seq after the slot word, so
// a record written between the two loads was reported Overwritten (slot was
// u64::MAX) or Hole (slot still held the previous lap), even on a ring
// without the SPARSE flag. Up to 5
// rounds, failing on the first that shows it.
func TestReadSlotBeingWrittenIsNotOverwritten(t *testing.T) {
	n := uint64(mpNeverWrapCap - 1)
	if testing.Short() || mpRaceEnabled() {
		n = 1 << 18 // 3 spinning pollers starve the producer under -race
	}
	for round := 1; round <= 5; round++ {
		bad, sample := mpReadSlotRound(t, n)
		if bad != 0 {
			t.Fatalf("round %d: ReadSlot reported %d records of a ring that never wrapped as overwritten or hole (first %v): "+
				"a record written between ReadSlot's slot load and its write_seq load must not pass for an "+
				"Overwritten (slot was u64::MAX) or Hole (slot held the previous lap) record", round, bad, sample)
		}
	}
}

func mpReadSlotRound(t *testing.T, n uint64) (bad uint64, sample []uint64) {
	w, path := mpNeverWrapRing(t)
	defer w.Close()
	r, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Several pollers, as several replica sessions would: more chances to
	// land a poll in the window.
	const pollers = 3
	type result struct {
		bad    uint64
		sample []uint64
		err    error
	}
	results := make(chan result, pollers)
	for range pollers {
		go func() {
			var res result
			buf := make([]byte, 8)
			deadline := time.Now().Add(60 * time.Second)
			for seq := uint64(1); seq <= n && res.err == nil; {
				st, err := r.ReadSlot(seq, buf)
				switch {
				case err != nil:
					res.err = err
				case st == SlotReady:
					if got := binary.LittleEndian.Uint64(buf); got != seq {
						res.err = fmt.Errorf("record %d holds %d", seq, got)
					}
					seq++
				case st == SlotOverwritten || st == SlotHole:
					res.bad++
					if len(res.sample) < 5 {
						res.sample = append(res.sample, seq)
					}
					seq++ // what a replica server would do: report a gap, move on
				case time.Now().After(deadline):
					res.err = fmt.Errorf("stuck at %d", seq)
				}
			}
			results <- res
		}()
	}
	mpPushSeqs(t, w, n)
	for range pollers {
		res := <-results
		if res.err != nil {
			t.Fatal(res.err)
		}
		bad += res.bad
		if sample == nil {
			sample = res.sample
		}
	}
	return bad, sample
}

// TestSparseFollowerNeverSkipsPublished: a mirror ring (SPARSE) written
// the way a mirror writes it, Store then Publish, record after record with
// no gap, in a ring that never wraps. A reader following it must get every
// record. Regression test for the hole branch of the same load-order race:
// a reader that saw slot c hold an older sequence and then loaded write_seq
// >= c must re-read slot c before calling c a hole (skipping holes starts
// after c). It fails on a library that fixes only the u64::MAX branch.
func TestSparseFollowerNeverSkipsPublished(t *testing.T) {
	n := uint64(mpNeverWrapCap - 1)
	if testing.Short() {
		n = 1 << 18
	}
	for round := 1; round <= 3; round++ {
		path := filepath.Join(t.TempDir(), "mirror")
		w, err := Create(path, RingConfig{PayloadSize: 8, Capacity: mpNeverWrapCap, Flags: FlagSparse}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rd, err := OpenReader(path, ReadOptions{Start: StartHead, NoRegister: true})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			jumps []string
			err   error
		}
		done := make(chan result, 1)
		go func() {
			var res result
			buf := make([]byte, 8)
			var prev uint64
			deadline := time.Now().Add(60 * time.Second)
			for prev < n {
				seq, ok := rd.TryRecv(buf)
				if !ok {
					if time.Now().After(deadline) {
						res.err = fmt.Errorf("stuck after %d", prev)
						break
					}
					continue
				}
				if seq != prev+1 && len(res.jumps) < 5 {
					res.jumps = append(res.jumps, fmt.Sprintf("%d->%d", prev, seq))
				}
				prev = seq
			}
			done <- res
		}()
		p := make([]byte, 8)
		for seq := uint64(1); seq <= n; seq++ {
			binary.LittleEndian.PutUint64(p, seq)
			if err := w.Store(seq, p); err != nil {
				t.Fatal(err)
			}
			if err := w.Publish(seq); err != nil {
				t.Fatal(err)
			}
		}
		res := <-done
		lapped, received := rd.Lapped(), rd.Received()
		rd.Close()
		w.Close()
		if res.err != nil {
			t.Fatal(res.err)
		}
		if lapped != 0 || received != n {
			t.Fatalf("round %d: a reader of a sparse ring written without a gap received %d of %d, lapped %d (jumps %v): "+
				"records stored and published between the reader's slot load and its write_seq load were skipped as holes",
				round, received, n, lapped, res.jumps)
		}
	}
}

// TestFutexWaitReadOnlyReader: a NoRegister reader with the FutexWait
// strategy must wait and time out like any other. Regression test: the ring
// was mapped read-only for NoRegister and the futex wait incremented the
// header's waiting_consumers word through that mapping: SIGSEGV, killing
// the process. The reader runs in a child process so a fault cannot take
// the test binary down.
func TestFutexWaitReadOnlyReader(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ring")
	w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 16}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := make([]byte, mpPayload)
	mpEncode(p, 1, 0)
	if _, err := w.Push(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestMultiProcHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), mpEnvRole+"=futex-readonly", mpEnvRing+"="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		first := stderr.String()
		if i := strings.Index(first, "\n\ngoroutine"); i > 0 {
			first = first[:i]
		}
		t.Fatalf("a NoRegister reader with FutexWait crashed in Recv (%v):\n%s\n%s", err, stdout.String(), first)
	}
	var res mpReaderResult
	mpParse(t, &mpProc{name: "futex-readonly reader", stdout: stdout, stderr: stderr}, &res)
	if res.Err != "" {
		t.Fatal(res.Err)
	}
}

// mpFutexReadOnly is the child of TestFutexWaitReadOnlyReader: it receives
// record 1, then waits for a record that never comes and must time out.
func mpFutexReadOnly(t *testing.T) mpReaderResult {
	var res mpReaderResult
	ws := FutexWait(0)
	rd, err := OpenReader(os.Getenv(mpEnvRing), ReadOptions{Start: StartOldest, NoRegister: true, Wait: &ws})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	buf := make([]byte, mpPayload)
	if seq, err := rd.Recv(buf, time.Second); err != nil || seq != 1 {
		res.Err = fmt.Sprintf("first Recv: %d %v", seq, err)
		return res
	}
	if seq, err := rd.Recv(buf, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		res.Err = fmt.Sprintf("second Recv: %d %v, want ErrTimeout", seq, err)
	}
	return res
}
