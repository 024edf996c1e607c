//go:build vmtest

package vmtest

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// side is one of the guest's NICs in its namespace.
type side struct {
	NS   string     // network namespace, /run/netns/<NS>
	If   string     // the virtio-net interface in it
	Addr netip.Addr // its IPv4 address (/24)
}

// guest returns the two NICs the guest's init set up. These files build
// only with the vmtest tag, which the runner sets; run by hand outside the
// guest, the test fails instead of passing by skipping.
func guest(t *testing.T) (a, b side) {
	t.Helper()
	if os.Getenv("VMTEST_GUEST") != "1" {
		t.Fatal("runs only inside the vmtest guest (make vmtest)")
	}
	get := func(p string) side {
		s := side{NS: os.Getenv(p + "_NS"), If: os.Getenv(p + "_IF")}
		var err error
		if s.Addr, err = netip.ParseAddr(os.Getenv(p + "_ADDR")); err != nil || s.NS == "" || s.If == "" {
			t.Fatalf("guest environment %s_{NS,IF,ADDR} incomplete: %+v, %v", p, s, err)
		}
		return s
	}
	return get("VMTEST_A"), get("VMTEST_B")
}

// enter switches the calling, locked thread into namespace ns.
func enter(ns string) error {
	fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Setns(fd, unix.CLONE_NEWNET)
}

// do runs fn on a thread in namespace ns and waits for it. Sockets fn
// creates stay in ns. The thread is switched back, or discarded if that
// fails.
func (s side) do(fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer unix.Close(orig)
		if err := enter(s.NS); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("setns %s: %w", s.NS, err)
			return
		}
		err = fn()
		if unix.Setns(orig, unix.CLONE_NEWNET) != nil {
			ch <- err // stays locked: the runtime ends the thread
			return
		}
		runtime.UnlockOSThread()
		ch <- err
	}()
	return <-ch
}

// goIn runs fn on a thread in namespace ns for fn's whole life (it may
// create sockets at any time); the thread is discarded afterwards. The
// channel closes when fn returns.
func (s side) goIn(t *testing.T, fn func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := enter(s.NS); err != nil {
			t.Errorf("setns %s: %v", s.NS, err)
			return
		}
		fn()
	}()
	return done
}

// exec runs a command in the namespace (ip netns exec) and returns its
// output.
func (s side) exec(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", s.NS}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip netns exec %s %s: %w: %s", s.NS, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// poll calls cond every `every` until it holds (true) or timeout passes.
func poll(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}
