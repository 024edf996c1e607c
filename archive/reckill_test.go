package archive

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// rcKillEnv, set in a child's environment, makes TestRecordKill9 the
// child: a recorder of the ring it names into the archive it names,
// running until it is killed.
const rcKillEnv = "ARCHIVE_TEST_KILL_CHILD"

// TestRecordKill9 kills a recorder process with SIGKILL at random
// points, 20 times, while its ring is written, each time starting
// another that resumes: the archive holds every record exactly once, in
// one epoch, and verifies clean.
func TestRecordKill9(t *testing.T) {
	if args := os.Getenv(rcKillEnv); args != "" {
		rcKillChild(t, args)
		return
	}
	ring, dir := rcShmPath(t), t.TempDir()
	const runs, chunk = 20, 1000
	p := rcRing(t, ring, 1<<15) // holds every record: nothing is lost
	var next uint64 = 1
	var seen []uint64
	for i := 0; i < runs; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRecordKill9$")
		cmd.Env = append(os.Environ(), rcKillEnv+"="+ring+"\n"+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The chunk is written over about 20 ms (50 records a tick of
		// a millisecond), so that the child archives it flush by flush;
		// the kill point is the moment the child has made a random
		// record of it readable (bounded: the child may be slow to
		// start), while it goes on with the rest.
		pushed := make(chan struct{})
		go func(from uint64) {
			defer close(pushed)
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for s := from; s < from+chunk; s++ {
				if got, err := p.Push(rcPayload(s, 1)); err != nil || got != s {
					t.Errorf("push %d: got %d, %v", s, got, err) // Fatal is the test goroutine's
					return
				}
				if s%50 == 49 {
					<-tick.C
				}
			}
		}(next)
		target := next + uint64(rand.IntN(chunk))
		next += chunk
		testenv.Await(5*time.Second, func() bool { return rcArchived(dir) >= target })
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		<-pushed
		if eps := rcEpochs(t, dir); len(eps) > 0 {
			seen = append(seen, eps[0].Last)
		}
	}
	t.Logf("the archive's end after each kill: %v", seen)
	w := rcOpenWriter(t, dir, rcKillOpts)
	t.Logf("after %d kills: %d torn bytes cut", runs, w.Stats().TornBytes)
	run := rcRecord(t, w, RecorderConfig{Ring: ring})
	run.until(t, next-1)
	if err := run.end(t); err != nil {
		t.Fatal(err)
	}
	rcCheck(t, rcEntries(t, dir, 1), rcWant{1, next - 1, 1})
	if eps := rcEpochs(t, dir); len(eps) != 1 {
		t.Fatalf("%d epochs, want 1", len(eps))
	}
	r := rcOpen(t, dir)
	if rep, err := r.Verify(); err != nil || len(rep.Problems) > 0 || rep.Records != next-1 || rep.Gaps != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// rcKillOpts: small segments and writes, so that a kill lands in a
// write or a seal as often as between them.
var rcKillOpts = Options{SegmentSize: 16 << 10, BufferSize: 2 << 10}

// rcKillChild records until killed.
func rcKillChild(t *testing.T, args string) {
	ring, dir, _ := strings.Cut(args, "\n")
	w, err := OpenWriter(dir, rcKillOpts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(w, RecorderConfig{Ring: ring, FlushDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Fatal(r.Run(context.Background())) // returns only on an error
}
