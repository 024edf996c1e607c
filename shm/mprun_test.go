package shm

// The parent side of the multi-process tests (multiproc_test.go): mpRun
// starts the producer and reader processes, drives the handshake, bounds
// every wait, never leaves a child behind, and parses the results.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

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
		testenv.Skipf(t, "no /dev/shm on this machine (%v)", err)
	}
	args := reexecArgs(t, cfg.wallClock+10*time.Second)
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
		p.cmd = exec.CommandContext(ctx, args[0], args[1:]...)
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
