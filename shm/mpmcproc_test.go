package shm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// mpmcStart runs this test binary as the child role, killed (and reaped)
// when the test ends if still running.
func mpmcStart(t *testing.T, ctx context.Context, ring, role string) *mpProc {
	t.Helper()
	args := reexecArgs(t, 90*time.Second)
	p := &mpProc{name: role, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, args[0], args[1:]...)
	p.cmd.Env = append(os.Environ(), mpmcEnvRing+"="+ring, mpmcEnvRole+"="+role)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", role, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func mpmcParse(t *testing.T, p *mpProc) mpmcResult {
	t.Helper()
	var res mpmcResult
	sc := bufio.NewScanner(bytes.NewReader(p.stdout.Bytes()))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), mpmcResultPrefix); ok {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatalf("%s: bad result %q: %v", p.name, line, err)
			}
			return res
		}
	}
	t.Fatalf("%s printed no result\n%s", p.name, p.output())
	return res
}

// TestMpmcMultiProcess: 4 producer processes (one SIGKILLed mid-stream)
// and 4 competing consumer processes on one MPMC ring, with 2 broadcast
// consumers watching. Every ticket is consumed by exactly one queue
// consumer or counted dropped; no record is torn or delivered twice;
// broadcast consumers see each producer's records in order; the kill
// hangs nobody (every process ends within the wall clock).
func TestMpmcMultiProcess(t *testing.T) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		testenv.Skipf(t, "no /dev/shm on this machine (%v)", err)
	}
	ring := fmt.Sprintf("/dev/shm/ringfire-mpmctest-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		files, _ := filepath.Glob(ring + "*")
		for _, f := range files {
			os.Remove(f)
		}
	})
	w, err := CreateMPMC(ring, RingConfig{PayloadSize: mpPayload, Capacity: 1024}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()

	const producers, consumers, broadcasts, each = 4, 4, 2, 20000
	var procs, prods, queues, bcasts []*mpProc
	for i := range consumers {
		queues = append(queues, mpmcStart(t, ctx, ring, fmt.Sprintf("queue:%d", i)))
	}
	for i := range broadcasts {
		bcasts = append(bcasts, mpmcStart(t, ctx, ring, fmt.Sprintf("broadcast:%d", i)))
	}
	for i := range producers - 1 {
		prods = append(prods, mpmcStart(t, ctx, ring, fmt.Sprintf("producer:%d:%d", i, each)))
	}
	victim := mpmcStart(t, ctx, ring, fmt.Sprintf("producer:%d:0", producers-1))
	procs = slices.Concat(queues, bcasts, prods, []*mpProc{victim})
	names := []string{}
	for i := range consumers {
		names = append(names, fmt.Sprintf("q%d", i))
	}
	for i := range broadcasts {
		names = append(names, fmt.Sprintf("b%d", i))
	}
	for i := range producers {
		names = append(names, fmt.Sprintf("p%d", i))
	}
	for _, n := range names {
		mpmcAwait(t, ctx, procs, func() bool { _, err := os.Stat(ring + ".ready." + n); return err == nil }, "ready."+n)
	}
	if err := mpTouch(ring + ".go"); err != nil {
		t.Fatal(err)
	}
	r := w.Ring()
	mpmcAwait(t, ctx, procs[:len(procs)-1], func() bool { return r.ClaimSeq() > each }, "the producers pass ticket 20000")
	// The victim itself must be mid-stream (on a slow machine the others
	// can pass ticket 20000 before it starts).
	victimUnderWay := fmt.Sprintf("%s.pushing.p%d", ring, producers-1)
	mpmcAwait(t, ctx, slices.Concat(queues, bcasts, []*mpProc{victim}), func() bool { _, err := os.Stat(victimUnderWay); return err == nil }, "the victim pushed 1000")
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	for _, p := range prods {
		mpmcWait(t, ctx, p)
		if res := mpmcParse(t, p); res.Pushed+res.Dropped != each {
			t.Errorf("%s: pushed %d + dropped %d, want %d", p.name, res.Pushed, res.Dropped, each)
		}
	}
	if err := mpTouch(ring + ".done"); err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Concat(queues, bcasts) {
		mpmcWait(t, ctx, p)
	}

	tickets := r.ClaimSeq() - 1
	seen := map[uint64]string{}
	var recv, lost uint64
	for i, p := range queues {
		res := mpmcParse(t, p)
		recv, lost = recv+res.Received, lost+res.Lost
		if res.Torn != 0 {
			t.Errorf("%s: %d torn records", p.name, res.Torn)
		}
		keys, err := os.ReadFile(fmt.Sprintf("%s.keys.%d", ring, i))
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k+8 <= len(keys); k += 8 {
			key := binary.LittleEndian.Uint64(keys[k:])
			if id, n := key>>40, key&(1<<40-1); id >= producers || id < producers-1 && n >= each {
				t.Errorf("%s: record of producer %d number %d was never pushed", p.name, id, n)
			}
			if other, dup := seen[key]; dup {
				t.Errorf("record %#x delivered to %s and %s", key, other, p.name)
			}
			seen[key] = p.name
		}
	}
	if uint64(len(seen)) != recv || recv+lost != tickets {
		t.Fatalf("%d distinct records, %d received + %d dropped, %d tickets", len(seen), recv, lost, tickets)
	}
	for _, p := range bcasts {
		res := mpmcParse(t, p)
		if res.Torn != 0 || res.OutOfOrder != 0 || res.Received == 0 {
			t.Errorf("%s: received %d, torn %d, out of order %d", p.name, res.Received, res.Torn, res.OutOfOrder)
		}
	}
	if tickets <= (producers-1)*each {
		t.Errorf("%d tickets: the killed producer never pushed", tickets)
	}
	t.Logf("%d tickets (%d from the killed producer): %d consumed once, %d dropped", tickets, tickets-(producers-1)*each, recv, lost)
}

// mpmcAwait polls cond until it holds, failing if a process of procs
// exits first or ctx ends.
func mpmcAwait(t *testing.T, ctx context.Context, procs []*mpProc, cond func() bool, what string) {
	t.Helper()
	var gone *mpProc
	ok := testenv.Await(time.Hour, func() bool { // bounded by ctx
		for _, p := range procs {
			if p.exited() {
				gone = p
				return true
			}
		}
		return cond() || ctx.Err() != nil
	})
	switch {
	case gone != nil && !cond():
		t.Fatalf("%s exited (%v) before %s\n%s", gone.name, gone.err, what, gone.output())
	case !ok || !cond():
		t.Fatalf("timed out waiting for %s", what)
	}
}

func mpmcWait(t *testing.T, ctx context.Context, p *mpProc) {
	t.Helper()
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Fatalf("%s did not finish: hung\n%s", p.name, p.output())
	}
	if p.err != nil {
		t.Fatalf("%s failed: %v\n%s", p.name, p.err, p.output())
	}
}
