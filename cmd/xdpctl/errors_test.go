package main

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netns"
)

// unprivileged runs xdpctl in ns on a thread switched to uid 65534 (which
// clears its effective capabilities), as an ordinary user would; setresuid
// is issued raw so that it changes this thread only (Go's Setresuid
// changes every thread). The saved uid stays 0, so the thread switches
// back afterwards, or is discarded.
func unprivileged(t *testing.T, ns *netns.NS, args ...string) error {
	t.Helper()
	var runErr error
	err := ns.Do(func() error {
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 65534, 65534, 0); e != 0 {
			return e
		}
		_, _, runErr = xdpctl(nil, args...)
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 0, 0, 0); e != 0 {
			runtime.Goexit() // never reuse a thread without privileges
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return runErr
}

// An unprivileged user is told to run as root.
func TestNotPrivileged(t *testing.T) {
	p := pair(t)
	must(t, p.A, "attach", p.AIf, "--mode", "generic")
	for _, tc := range []struct {
		ns   *netns.NS
		args []string
	}{
		{p.B, []string{"attach", p.BIf, "--mode", "generic"}},
		{p.A, []string{"detach", p.AIf}},
		{p.A, []string{"status", p.AIf}},
		{p.A, []string{"stats", p.AIf}},
		{p.A, []string{"fault", p.AIf, "--off"}},
	} {
		err := unprivileged(t, tc.ns, tc.args...)
		if err == nil || !strings.Contains(err.Error(), rootHint) {
			t.Errorf("%q unprivileged: %v", tc.args, err)
		}
	}
	if got := xdpOn(t, p.A, p.AIf); got != "xdpgeneric" {
		t.Errorf("an unprivileged detach detached: %q", got)
	}
}
