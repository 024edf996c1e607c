package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
)

// child is a ringfire command running as a child process.
type child struct {
	name string
	// stopped, when set, is a line stop wants in the log once the child
	// exited (ringfire run logs msg=stopped).
	stopped string
	cmd     *exec.Cmd
	mu      sync.Mutex
	out     bytes.Buffer // stdout and stderr
	done    chan struct{}
	err     error
}

func (c *child) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}

func (c *child) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// startChild runs `ringfire args...` in the test's own network namespace.
func startChild(t *testing.T, name string, args ...string) *child {
	t.Helper()
	return startProc(t, name, nil, args...)
}

// startProc runs `ringfire args...` (this test binary as the CLI), in ns
// unless ns is nil, for at most two minutes; the test's end kills it if it
// still runs, and logs its output if the test failed.
func startProc(t *testing.T, name string, ns *netns.NS, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{exe}, args...)
	if ns != nil {
		// nsenter, not ip netns exec: that remounts /sys, hiding the bpffs
		// pins the test shares with the process.
		argv = append([]string{"nsenter", "--net=/run/netns/" + ns.Name}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c := &child{name: name, cmd: exec.CommandContext(ctx, argv[0], argv[1:]...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), "RINGFIRE_TEST_MAIN=1")
	c.cmd.Stdout, c.cmd.Stderr = c, c
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); cancel(); close(c.done) }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("ringfire %s:\n%s", strings.Join(args, " "), c.logs())
		}
	})
	return c
}

// waitLog waits until the child's output holds s, failing if it exits
// first.
func (c *child) waitLog(t *testing.T, s string) {
	t.Helper()
	testenv.Until(t, 20*time.Second, fmt.Sprintf("%s to print %q", c.name, s), func() bool {
		if strings.Contains(c.logs(), s) {
			return true
		}
		select {
		case <-c.done:
			t.Fatalf("%s exited (%v) before printing %q:\n%s", c.name, c.err, s, c.logs())
		default:
		}
		return false
	})
}

// alive fails t if the child has exited.
func (c *child) alive(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
		t.Fatalf("%s exited: %v\n%s", c.name, c.err, c.logs())
	default:
	}
}

// noFault fails t if the child's output shows a Go runtime crash.
func (c *child) noFault(t *testing.T) {
	t.Helper()
	for _, crash := range []string{"fatal error", "unexpected fault address", "SIGBUS", "SIGSEGV", "goroutine 1 ["} {
		if strings.Contains(c.logs(), crash) {
			t.Fatalf("%s crashed (%q):\n%s", c.name, crash, c.logs())
		}
	}
}

// stop sends SIGTERM and waits: the child must exit 0, not die.
func (c *child) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop on SIGTERM:\n%s", c.name, c.logs())
	}
	c.noFault(t)
	if c.err != nil {
		t.Fatalf("%s exited with %v:\n%s", c.name, c.err, c.logs())
	}
	if c.stopped != "" {
		wantContains(t, "the log after SIGTERM", c.logs(), c.stopped)
	}
}

// waitLogs waits until the child has logged n lines containing s.
func (c *child) waitLogs(t *testing.T, n int, s string) {
	t.Helper()
	testenv.Until(t, 20*time.Second, fmt.Sprintf("%d log lines with %q", n, s), func() bool { return strings.Count(c.logs(), s) >= n })
}

// exited waits for the child to exit on its own, with status 0.
func (c *child) exited(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still runs:\n%s", c.name, c.logs())
	}
	if c.err != nil {
		t.Fatalf("%s exited with %v:\n%s", c.name, c.err, c.logs())
	}
}

// exitedWithError waits for the child to exit on its own, with status 1
// (an error it reported), not 2 (a Go runtime crash) nor a signal.
func (c *child) exitedWithError(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s still runs:\n%s", c.name, c.logs())
	}
	c.noFault(t)
	var ee *exec.ExitError
	if !errors.As(c.err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("%s exited with %v, want status 1:\n%s", c.name, c.err, c.logs())
	}
}
