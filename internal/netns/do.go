package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// enter switches the calling (locked) thread into ns.
func (ns *NS) enter() error {
	fd, err := unix.Open(runDir+"/"+ns.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netns: open %s/%s: %w", runDir, ns.Name, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("netns: setns into %s: %w", ns.Name, err)
	}
	return nil
}

type doResult struct {
	err      error
	panicked bool
	pv       any
	stack    []byte
}

// Do runs fn on a locked OS thread switched into ns and waits for it. fn runs
// in a separate goroutine; see the package documentation for the rules.
// A panic in fn is re-raised in the caller after the thread is restored.
func (ns *NS) Do(fn func() error) error {
	ch := make(chan doResult, 1)
	go func() {
		r := doResult{err: fmt.Errorf("netns: fn in %s called runtime.Goexit (t.FailNow/Skip are not allowed in Do); thread discarded", ns.Name)}
		defer func() { ch <- r }()
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			r.err = fmt.Errorf("netns: open own namespace: %w", err)
			runtime.UnlockOSThread()
			return
		}
		defer unix.Close(orig)
		if err := ns.enter(); err != nil {
			r.err = err // setns is all-or-nothing: still in the original namespace
			runtime.UnlockOSThread()
			return
		}
		r = call(fn)
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Stay locked: the goroutine exits and the runtime kills the thread.
			r.err = errors.Join(r.err, fmt.Errorf("netns: switching back from %s: %w (thread discarded)", ns.Name, err))
			return
		}
		runtime.UnlockOSThread()
	}()
	r := <-ch
	if r.panicked {
		panic(fmt.Sprintf("netns: panic in %s.Do: %v\n\noriginal stack:\n%s", ns.Name, r.pv, r.stack))
	}
	return r.err
}

func call(fn func() error) (r doResult) {
	defer func() {
		if pv := recover(); pv != nil {
			r = doResult{panicked: true, pv: pv, stack: debug.Stack()}
		}
	}()
	return doResult{err: fn()}
}

// Go runs fn in a new goroutine locked to an OS thread that is in ns for fn's
// whole life and is never switched back: the goroutine exits still locked, so
// the runtime terminates the thread. done is closed when fn has returned.
// If entering ns fails, fn is not run and the test is marked failed.
func (ns *NS) Go(fn func()) (done <-chan struct{}) {
	ch := make(chan struct{})
	ns.wg.Add(1)
	go func() {
		defer ns.wg.Done()
		defer close(ch)
		runtime.LockOSThread() // never unlocked, by design
		if err := ns.enter(); err != nil {
			ns.t.Errorf("netns: Go: %v", err)
			return
		}
		fn()
	}()
	return ch
}

// Run returns an unstarted command running `ip netns exec <ns> name args...`.
func (ns *NS) Run(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Exec runs `ip netns exec <ns> args...` (bounded by a 30 s timeout) and
// returns its combined output.
func (ns *NS) Exec(args ...string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("netns: Exec: no command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := ns.Run(ctx, args[0], args[1:]...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("netns: ip netns exec %s %s: %w: %s",
			ns.Name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// SetTxChecksum turns TX checksum offload of ifname in ns on or off with
// `ethtool -K <if> tx on|off`. It fails if ethtool is not installed.
func (ns *NS) SetTxChecksum(ifname string, on bool) error {
	if _, err := exec.LookPath("ethtool"); err != nil {
		return fmt.Errorf("netns: SetTxChecksum %s in %s: ethtool is missing (install ethtool): %w", ifname, ns.Name, err)
	}
	v := "off"
	if on {
		v = "on"
	}
	_, err := ns.Exec("ethtool", "-K", ifname, "tx", v)
	return err
}
