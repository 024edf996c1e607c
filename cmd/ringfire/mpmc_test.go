package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/shm"
)

// gen --producers re-executes this binary: make it run the CLI
// (privilege_test.go's TestMain).
func init() { producerEnv = append(producerEnv, "RINGFIRE_TEST_MAIN=1") }

func wantMatch(t *testing.T, what, out string, res ...string) {
	t.Helper()
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("%s does not match %s:\n%s", what, re, out)
		}
	}
}

// TestGenProducersTailQueue: three producer processes fill one MPMC ring;
// stat names it and its sequences; two competing tails share the records
// (each exactly once), a broadcast tail validates every one.
func TestGenProducersTailQueue(t *testing.T) {
	path := genRing(t, "--producers", "3", "--count", "3000", "--capacity", "4096")
	out := mustRun(t, "stat", path)
	wantMatch(t, "stat", out,
		`(?m)^ring +\S+ \(multi-producer\)$`,
		`(?m)^flags +0x21 LATEST_WINS\|MODE_MPMC$`,
		`(?m)^write_seq +3000$`,
		`(?m)^claim_seq +3001 \(next ticket; 3000 claimed\)$`,
		`(?m)^read_seq +1 \(next ticket for queue consumers; backlog 3000\)$`)
	var rep statReport
	if err := json.Unmarshal([]byte(mustRun(t, "stat", path, "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != "multi-producer" || rep.ClaimSeq != 3001 || rep.ReadSeq != 1 {
		t.Errorf("stat --json: kind %q, claim_seq %d, read_seq %d", rep.Kind, rep.ClaimSeq, rep.ReadSeq)
	}

	outs := make([]string, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _, _ = runCmd(t, "tail", path, "--queue", "--timeout", "300ms", "--quiet")
		}()
	}
	wg.Wait()
	total := 0
	for i, o := range outs {
		m := regexp.MustCompile(`received (\d+), dropped 0, gaps \d+, checksum errors 0, sequence errors 0`).FindStringSubmatch(o)
		if m == nil {
			t.Fatalf("tail --queue %d: %s", i, o)
		}
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if total != 3000 {
		t.Fatalf("the two queue tails received %d records together, want 3000:\n%s\n%s", total, outs[0], outs[1])
	}
	wantMatch(t, "stat after the queue tails", mustRun(t, "stat", path), `(?m)^read_seq +3001 \(next ticket for queue consumers; backlog 0\)$`)
	out = mustRun(t, "tail", path, "--from", "oldest", "--count", "3000", "--quiet")
	wantContains(t, "broadcast tail", out, "received 3000, lapped 0, gaps 0, checksum errors 0, sequence errors 0 (seq 1..3000)")
}

func TestGenProducersUsage(t *testing.T) {
	for _, args := range [][]string{
		{"gen", "x", "--producers", "2", "--lossless"},
		{"gen", "x", "--producers", "-1"},
		{"gen", "x", "--join", "--lossless"},
	} {
		if _, _, err := runCmd(t, args...); err == nil {
			t.Errorf("ringfire %v succeeded", args)
		} else if ue := (*usageError)(nil); !errors.As(err, &ue) {
			t.Errorf("ringfire %v: %v, want a usage error", args, err)
		}
	}
}

// TestGenProducersUntilCancelled: interrupting gen --producers interrupts
// its producer processes, which report what they wrote.
func TestGenProducersUntilCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		defer cancel()
		// Both producers run once they hold their shared flocks (the
		// parent holds a third); then 1,000 records more flow, which at
		// 10,000/s each gives both time to write (a count reached by the
		// first producer alone, before the second wrote, said nothing of
		// the second).
		claimed := func() (uint64, bool) {
			r, err := shm.Open(path, shm.OpenOptions{})
			if err != nil {
				return 0, false
			}
			defer r.Close()
			return r.ClaimSeq(), true
		}
		var n0 uint64
		testenv.Await(20*time.Second, func() bool {
			n, ok := claimed()
			n0 = n
			return ctx.Err() != nil || ok && flocks(t, path) == 3
		})
		testenv.Await(20*time.Second, func() bool {
			n, _ := claimed()
			return ctx.Err() != nil || n > n0+1000
		})
	}()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"gen", path, "--producers", "2", "--rate", "20000", "--capacity", "1024"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	wantMatch(t, "gen output", out, `(?m)^producer 0: wrote [1-9][0-9]* records`, `(?m)^producer 1: wrote [1-9][0-9]* records`,
		`(?m)^2 producers: [1-9][0-9]* tickets`)
}

// flocks counts the flock(2) locks held on the file at path (/proc/locks).
func flocks(t *testing.T, path string) int {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Error(err)
		return 0
	}
	suffix := ":" + strconv.FormatUint(st.Ino, 10)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// "1: FLOCK ADVISORY READ pid maj:min:inode start end"
		if len(f) >= 6 && f[1] == "FLOCK" && strings.HasSuffix(f[5], suffix) {
			n++
		}
	}
	return n
}
