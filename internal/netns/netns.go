package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

const (
	runDir     = "/run/netns"
	cmdTimeout = 30 * time.Second // bound for every ip/ethtool invocation
	goWait     = 5 * time.Second  // how long cleanup waits for Go goroutines
)

// NS is one network namespace, reachable as /run/netns/<Name>.
type NS struct {
	Name string

	t  owner
	wg sync.WaitGroup // goroutines started by Go
}

// owner is who deletes a namespace and hears of its troubles: a test
// (testing.TB), or a program's Owner.
type owner interface {
	Cleanup(func())
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

var (
	prefix  = fmt.Sprintf("rf%d-", os.Getpid())
	counter struct {
		sync.Mutex
		n    int
		live map[string]bool // namespaces this process currently owns
	}
	probeOnce sync.Once
	skipMsg   string // set when the environment cannot create namespaces
	probeErr  error  // set when the probe failed for another reason
)

// Require skips the test unless it runs as root, `ip` is installed and a
// network namespace can be created (under CI, where all of these hold on
// the target machine, it fails instead: internal/testenv); it fails the
// test if creating the probe namespace fails for any other reason.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skipf(t, "netns: skipping, needs root (euid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Skipf(t, "netns: skipping, iproute2 `ip` not found: %v", err)
	}
	probeOnce.Do(probe)
	if skipMsg != "" {
		testenv.Skipf(t, "%s", skipMsg)
	}
	if probeErr != nil {
		t.Fatal(probeErr)
	}
}

func probe() {
	sweep()
	name := prefix + "probe"
	own(name)
	defer disown(name)
	if err := ip("", "netns", "add", name); err != nil {
		if strings.Contains(err.Error(), "Operation not permitted") {
			skipMsg = fmt.Sprintf("netns: skipping, cannot create a network namespace: %v", err)
			return
		}
		probeErr = err
		return
	}
	probeErr = ip("", "netns", "del", name)
}

// next returns a fresh per-process index for naming and addressing.
func next() int {
	counter.Lock()
	defer counter.Unlock()
	counter.n++
	return counter.n
}

func own(name string) {
	counter.Lock()
	defer counter.Unlock()
	if counter.live == nil {
		counter.live = map[string]bool{}
	}
	counter.live[name] = true
}

func disown(name string) {
	counter.Lock()
	defer counter.Unlock()
	delete(counter.live, name)
}

// sweep deletes rf<pid>-* namespaces that this process does not own. Another
// live process cannot have our pid, so these are leftovers of a dead one.
func sweep() {
	ents, err := os.ReadDir(runDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		counter.Lock()
		mine := counter.live[n]
		counter.Unlock()
		if !mine {
			_ = ip("", "netns", "del", n)
		}
	}
}

// newNS creates namespace prefix+suffix and registers its deletion with t.
func newNS(t owner, suffix string) (*NS, error) {
	ns := &NS{Name: prefix + suffix, t: t}
	own(ns.Name)
	if err := ip("", "netns", "add", ns.Name); err != nil {
		disown(ns.Name)
		return nil, err
	}
	t.Cleanup(func() { ns.remove(t) })
	return ns, nil
}

func (ns *NS) remove(t owner) {
	done := make(chan struct{})
	go func() { ns.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(goWait):
		t.Logf("netns: goroutines started with %s.Go still running after %v; stop them before the test ends", ns.Name, goWait)
	}
	if err := ip("", "netns", "del", ns.Name); err != nil {
		if _, serr := os.Stat(runDir + "/" + ns.Name); serr == nil {
			t.Errorf("netns: cleanup: %v", err)
			return
		}
	}
	disown(ns.Name)
}

// ip runs `ip args...` (with stdin as a -batch script if non-empty) and wraps
// failures with the command line and its output.
func ip(stdin string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.WaitDelay = time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("netns: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		if stdin != "" {
			msg += fmt.Sprintf(" (batch %q)", stdin)
		}
		return errors.New(msg)
	}
	return nil
}
