package shm

// The child processes of the multi-process tests (multiproc_test.go): the
// environment that gives each its role, the results they print, and the
// producer and reader loops. The records are mpEncode's checksummed ones.

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
)

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

// mpEnvU64s parses the environment variables names as unsigned integers.
func mpEnvU64s(names ...string) ([]uint64, error) {
	vs := make([]uint64, len(names))
	for i, name := range names {
		v, err := strconv.ParseUint(os.Getenv(name), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", name, err)
		}
		vs[i] = v
	}
	return vs, nil
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

// mpProducer is the producer child. An error (rather than a result with
// Err set) is a failure of the child's setup, not of the stream.
func mpProducer() (mpProducerResult, error) {
	var res mpProducerResult
	ring := os.Getenv(mpEnvRing)
	vs, err := mpEnvU64s(mpEnvCap, mpEnvPrefill, mpEnvCount, mpEnvBudget)
	if err != nil {
		return res, err
	}
	capa, prefill, final := vs[0], vs[1], vs[2]
	budget := time.Duration(vs[3]) * time.Millisecond
	lossless := os.Getenv(mpEnvLossless) == "1"

	cfg := RingConfig{PayloadSize: mpPayload, Capacity: capa}
	if lossless {
		cfg.Flags |= FlagLossless
	}
	w, err := Create(ring, cfg, CreateOptions{})
	if err != nil {
		return res, err
	}
	defer w.Close()
	p := make([]byte, mpPayload)
	for seq := uint64(1); seq <= prefill; seq++ {
		mpEncode(p, seq, 0)
		if _, err := w.Push(p); err != nil {
			return res, fmt.Errorf("prefill push %d: %w", seq, err)
		}
	}
	if err := mpTouch(ring + ".created"); err != nil {
		return res, err
	}
	if err := mpWaitFile(ring+".go", 60*time.Second); err != nil {
		res.Err = err.Error()
		return res, nil
	}
	if lossless {
		rs, err := w.Ring().Readers()
		if err != nil {
			return res, err
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
			return res, nil
		}
		res.Pushed++
		if flags&mpFlagLast != 0 {
			res.Final = seq
			break
		}
	}
	res.ElapsedMs = time.Since(start).Milliseconds()
	res.Backpressure = w.Stats().Backpressure
	return res, nil
}

// mpReader is the reader child. An error (rather than a result with Err
// set) is a failure of the child's setup, not of the stream.
func mpReader() (mpReaderResult, error) {
	ring := os.Getenv(mpEnvRing)
	lossless := os.Getenv(mpEnvLossless) == "1"
	vs, err := mpEnvU64s(mpEnvIndex)
	if err != nil {
		return mpReaderResult{}, err
	}
	idx := int(vs[0])
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
			return res, fmt.Errorf("start %q: %w", s, err)
		}
		opts.Start, opts.Sequence, res.Requested = StartSequence, n, n
	default:
		return res, fmt.Errorf("unknown start %q", s)
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
		return res, fmt.Errorf("unknown wait %q", res.Wait)
	}
	opts.Wait = &ws
	rd, err := OpenReader(ring, opts)
	if err != nil {
		return res, err
	}
	defer rd.Close()
	if lossless && !rd.Registered() {
		return res, errors.New("reader of a lossless ring did not register")
	}
	res.AttachWrite = rd.Ring().WriteSeq()
	res.Next0, res.Lapped0 = rd.Next(), rd.Lapped()
	if err := mpTouch(fmt.Sprintf("%s.ready.%d", ring, idx)); err != nil {
		return res, err
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
	return res, nil
}
