package role

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
	"golang.org/x/sys/unix"
)

// The archive section's roles, each a process of its own. Each says
// ready, waits for a command on stdin, and says result with its JSON:
//
//	producer  creates Ring (Capacity records of Record bytes); on "go"
//	          pushes Rate records/s for Limit, in batches; ProducerResult;
//	          or, any number of times, on "push RATE NS COUNT" pushes
//	          RATE records/s for NS nanoseconds or COUNT records (0: no
//	          bound), each record ringfire gen's for its own sequence
//	          (checkable: synth.Check); ProducerResult each time
//	recorder  records Read into the archive Dir (archive.Recorder, from
//	          the oldest record, Sync); ready once attached; on "wait N"
//	          (any number of times) waits (at most Limit) until it wrote
//	          sequence N, syncs the archive's files if SyncFS;
//	          RecorderResult, its counts since it started
//	replayer  replays the archive Dir into Ring once (the page cache
//	          warm, the ring made), ready; on "go" replays it again at
//	          speed 0 (as fast as it can); ReplayerResult
const (
	ArchProducer = "archive-producer"
	ArchRecorder = "archive-recorder"
	ArchReplayer = "archive-replayer"
)

// The archive roles' commands.
const (
	CmdGo   = "go"
	CmdWait = "wait " // and the last sequence pushed
	CmdPush = "push " // and the rate, the time bound in ns, the count bound
)

// cmdLimit bounds the wait for a producer's or recorder's next command
// once it took one: the parent may be timing a mirror's catch-up.
const cmdLimit = 10 * time.Minute

// ProducerResult is what the producer pushed.
type ProducerResult struct {
	Pushed uint64 `json:"pushed"`
	Last   uint64 `json:"last"` // the last sequence
	// Wakes counts the open-loop producer's sleeps between records due
	// (smoothPush): Pushed ÷ Wakes is its mean burst.
	Wakes uint64 `json:"wakes,omitempty"`
}

// RecorderResult is what the recorder wrote, as its archive.Recorder
// counts it.
type RecorderResult struct {
	Records    uint64 `json:"records"`
	Gaps       uint64 `json:"gaps"`
	GapRecords uint64 `json:"gap_records"`
	Bytes      uint64 `json:"bytes"`   // entry bytes written
	Written    bool   `json:"written"` // sequence N written within the bound
	Flushes    uint64 `json:"flushes"`
	Syncs      uint64 `json:"syncs"`
	SyncNs     int64  `json:"sync_ns"` // the final syncfs (SyncFS)
}

// ReplayerResult is what the measured replay wrote into the ring.
type ReplayerResult struct {
	Records uint64 `json:"records"`
	Ns      int64  `json:"ns"`
}

// archBatch is the producer's largest batch, in records.
const archBatch = 4096

// awaitCmd waits (bounded by roleLimit) for a command starting with want
// and returns the rest of it.
func awaitCmd(cmds <-chan string, gone <-chan struct{}, want string) (string, error) {
	select {
	case c := <-cmds:
		rest, ok := strings.CutPrefix(c, want)
		if !ok {
			return "", fmt.Errorf("role: command %q, want %q", c, want)
		}
		return rest, nil
	case <-gone:
		return "", errors.New("role: stdin closed before " + strconv.Quote(want))
	case <-time.After(roleLimit):
		return "", errors.New("role: no " + strconv.Quote(want) + " within " + roleLimit.String())
	}
}

// readyForCmd says ready and waits (bounded by roleLimit) for the first
// command.
func readyForCmd(out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) (string, error) {
	if err := say(out, LineReady); err != nil {
		return "", err
	}
	return awaitCmd(cmds, gone, "")
}

func sayResult(out *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return say(out, LineResult+string(b))
}

// archProducer pushes synthetic records (ringfire gen's, filled once and
// pushed again and again) at s.Rate for s.Limit on "go", or sequenced
// records on each "push" (archPush).
func archProducer(s Spec, out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) error {
	w, err := shm.Create(s.Ring, shm.RingConfig{PayloadSize: s.Record, Capacity: s.Capacity}, shm.CreateOptions{Replace: true})
	if err != nil {
		return err
	}
	defer w.Close()
	recs := make([]byte, archBatch*s.Record)
	for i := range archBatch {
		synth.Fill(recs[i*s.Record:(i+1)*s.Record], uint64(i)+1, uint64(i))
	}
	cmd, err := readyForCmd(out, cmds, gone)
	if err != nil {
		return err
	}
	if cmd != CmdGo {
		recs := make([]byte, archBatch*s.Record)
		return pushes(cmd, out, cmds, gone, func(rate uint64, d time.Duration, count uint64) (ProducerResult, error) {
			return archPush(w, s.Record, recs, rate, d, count)
		})
	}
	var res ProducerResult
	start := time.Now()
	for el := time.Duration(0); el < time.Duration(s.Limit); el = time.Since(start) {
		due := uint64(el.Seconds() * float64(s.Rate))
		for res.Pushed < due {
			n := min(due-res.Pushed, archBatch)
			if res.Last, err = w.PushBatch(recs[:int(n)*s.Record], s.Record); err != nil {
				return err
			}
			res.Pushed += n
		}
		pace.Sleep()
	}
	if err := sayResult(out, res); err != nil {
		return err
	}
	return awaitGone(gone)
}

// pushes runs a producer's "push" commands, the first cmd, until stdin
// closes: push pushes rate records/s for d or count records, whichever
// comes first (0: no bound).
func pushes(cmd string, out *bufio.Writer, cmds <-chan string, gone <-chan struct{},
	push func(rate uint64, d time.Duration, count uint64) (ProducerResult, error)) error {
	return commands(cmd, cmds, gone, func(cmd string) error {
		var rate, ns, count uint64
		arg, ok := strings.CutPrefix(cmd, CmdPush)
		if _, err := fmt.Sscan(arg, &rate, &ns, &count); !ok || err != nil || rate == 0 {
			return fmt.Errorf("role: producer command %q: want go or push RATE NS COUNT", cmd)
		}
		res, err := push(rate, time.Duration(ns), count)
		if err != nil {
			return err
		}
		return sayResult(out, res)
	})
}

// commands runs handle on cmd and then on each later command, waiting at
// most cmdLimit for each, until stdin closes.
func commands(cmd string, cmds <-chan string, gone <-chan struct{}, handle func(cmd string) error) error {
	for {
		if err := handle(cmd); err != nil {
			return err
		}
		select {
		case cmd = <-cmds:
		case <-gone:
			return nil
		case <-time.After(cmdLimit):
			return errors.New("role: no command or end within " + cmdLimit.String())
		}
	}
}

// archPush pushes rate records/s for d or count records, whichever comes
// first (0: no bound), each filled for its own sequence.
func archPush(w *shm.Writer, size int, recs []byte, rate uint64, d time.Duration, count uint64) (ProducerResult, error) {
	return pacedPush(rate, d, count, func(n uint64) (uint64, error) {
		next := w.Next()
		for i := range n {
			synth.Fill(recs[int(i)*size:int(i+1)*size], next+i, 0)
		}
		return w.PushBatch(recs[:int(n)*size], size)
	})
}

// pacedPush calls push, which pushes n records (at most archBatch) and
// returns the last sequence, for the records due at rate records/s, sleeping between the
// bursts (pace.Sleep), for d or count records, whichever comes first (0:
// no bound).
func pacedPush(rate uint64, d time.Duration, count uint64, push func(n uint64) (uint64, error)) (ProducerResult, error) {
	var res ProducerResult
	if count == 0 {
		count = ^uint64(0)
	}
	start := time.Now()
	for el := time.Duration(0); res.Pushed < count && (d == 0 || el < d); el = time.Since(start) {
		due := min(uint64(el.Seconds()*float64(rate)), count)
		for res.Pushed < due {
			n := min(due-res.Pushed, archBatch)
			last, err := push(n)
			if err != nil {
				return res, err
			}
			res.Last, res.Pushed = last, res.Pushed+n
		}
		pace.Sleep()
	}
	return res, nil
}

// archRecorder records ring s.Read into the archive s.Dir.
func archRecorder(s Spec, out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) error {
	mode, every, err := archive.ParseSync(s.Sync)
	if err != nil {
		return err
	}
	w, err := archive.OpenWriter(s.Dir, archive.Options{Sync: mode, SyncEvery: every})
	if err != nil {
		return err
	}
	defer w.Close()
	rec, err := archive.NewRecorder(w, archive.RecorderConfig{Ring: s.Read, Start: archive.StartOldest, Poll: time.Millisecond})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := pace.Until(ringOpenWait, "the recorder to attach", func() bool { return rec.Stats().Epoch != 0 }); err != nil {
		return err
	}
	if err := say(out, LineReady); err != nil {
		return err
	}
	arg, err := awaitCmd(cmds, gone, CmdWait)
	for err == nil {
		if err = recorderWait(s, w, rec, arg, done, out); err != nil {
			return err
		}
		select { // another wait, or the end
		case c := <-cmds:
			var ok bool
			if arg, ok = strings.CutPrefix(c, CmdWait); !ok {
				return fmt.Errorf("role: command %q, want %q", c, CmdWait)
			}
		case <-gone:
			return nil
		case <-time.After(cmdLimit):
			return errors.New("role: no command or end within " + cmdLimit.String())
		}
	}
	return err
}

// recorderWait answers the recorder's "wait N" (arg is N).
func recorderWait(s Spec, w *archive.Writer, rec *archive.Recorder, arg string, done <-chan error, out *bufio.Writer) error {
	last, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		return fmt.Errorf("role: wait %q: %w", arg, err)
	}
	res := RecorderResult{Written: waitWritten(w, last, time.Duration(s.Limit), done)}
	if s.SyncFS {
		if res.SyncNs, err = syncFS(s.Dir); err != nil {
			return err
		}
	}
	st := rec.Stats()
	res.Records, res.Gaps, res.GapRecords, res.Bytes = st.Records, st.Gaps, st.GapRecords, st.Writer.Bytes
	res.Flushes, res.Syncs = st.Writer.Flushes, st.Writer.Syncs
	return sayResult(out, res)
}

// waitWritten polls (every 50 µs, at most bound) until w wrote sequence
// last (its write of the buffer holding it returned: Stats().Last and
// Flushes are published together at a flush), or the recorder ended.
func waitWritten(w *archive.Writer, last uint64, bound time.Duration, done <-chan error) bool {
	deadline := time.Now().Add(bound)
	for {
		if w.Stats().Last >= last {
			return true
		}
		select {
		case <-done:
			return false
		default:
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// syncFS makes every file of the archive in dir durable (fdatasync each,
// then the directory: what a durable write costs once everything is
// written, without syncing the rest of the filesystem) and returns how
// long it took.
func syncFS(dir string) (int64, error) {
	start := time.Now()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	for _, e := range append(ents, nil) {
		path := dir
		if e != nil {
			path = filepath.Join(dir, e.Name())
		}
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		err = unix.Fdatasync(int(f.Fd()))
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("role: %s: %w", path, os.NewSyscallError("fdatasync", err))
		}
	}
	return int64(time.Since(start)), nil
}

// archReplayer replays the archive s.Dir into ring s.Ring at speed 0:
// once to warm the page cache and make the ring, then once measured.
func archReplayer(s Spec, out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) error {
	r, err := archive.Open(s.Dir)
	if err != nil {
		return err
	}
	defer r.Close()
	cfg := archive.ReplayConfig{Ring: s.Ring, Replace: true}
	if _, err := archive.Replay(context.Background(), r, cfg); err != nil {
		return err
	}
	if err := say(out, LineReady); err != nil {
		return err
	}
	if _, err := awaitCmd(cmds, gone, CmdGo); err != nil {
		return err
	}
	start := time.Now()
	st, err := archive.Replay(context.Background(), r, cfg)
	el := time.Since(start)
	if err != nil {
		return err
	}
	if err := sayResult(out, ReplayerResult{Records: st.Records, Ns: int64(el)}); err != nil {
		return err
	}
	return awaitGone(gone)
}
