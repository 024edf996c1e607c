package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
)

// A config rewritten in place in two halves with a SIGHUP between them:
// the first half parses on its own (one table fewer), and applying it
// would stop a unit. The reload waits for the file to settle and applies
// the whole, which changes nothing. Before, it applied the half at once
// (stopped=1).
func TestRunReloadWaitsForTheWholeFile(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	rings := newTestRings(t, "a", "b")
	half := fmt.Sprintf("[[serve]]\nring = %q\nbind = \"%s:7400\"\n", rings.path("a"), p.AAddr)
	rest := fmt.Sprintf("\n[[serve]]\nring = %q\nbind = \"%s:7401\"\n", rings.path("b"), p.AAddr)
	cfg := filepath.Join(t.TempDir(), "ringfire.toml")
	writeFile(t, cfg, half+rest)
	r := startRun(t, p.A, cfg)
	r.waitLogs(t, 1, "msg=running")

	f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(half); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	r.cmd.Process.Signal(syscall.SIGHUP)
	testenv.Until(t, 20*time.Second, "the reload to wait, or to apply", func() bool {
		l := r.logs()
		return strings.Contains(l, "waiting for it to settle") || strings.Contains(l, "msg=reloaded")
	})
	if l := r.logs(); strings.Contains(l, "msg=reloaded") {
		t.Fatalf("the first half was applied:\n%s", l)
	}
	if _, err := f.WriteString(rest); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	second := time.Since(written)
	r.waitLogs(t, 1, "msg=reloaded")
	t.Logf("second half written %v after the first; reloaded %v after it", second.Round(time.Millisecond),
		(time.Since(written) - second).Round(time.Millisecond))
	wantContains(t, "the reload", r.logs(), "started=0 stopped=0 restarted=0 unchanged=2")
	r.stop(t)
}
