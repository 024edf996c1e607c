package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
)

// TestMain runs the CLI itself when RINGFIRE_TEST_MAIN is set: a test can
// then run ringfire as another user (this binary, copied where that user
// can execute it).
func TestMain(m *testing.M) {
	if os.Getenv("RINGFIRE_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// Without the privilege to load an XDP program (an unprivileged user, no
// capabilities), serve --xdp says why in one log line and serves over
// kernel UDP; with --require-xdp it fails.
func TestXDPFallbackWithoutPrivilege(t *testing.T) {
	unprivileged := unprivilegedServe(t, "--xdp", "veth0")
	out, err := unprivileged()
	if err != nil {
		t.Fatalf("unprivileged serve --xdp: %v\n%s", err, out)
	}
	wantContains(t, "unprivileged serve", out, "AF_XDP unavailable, falling back to kernel UDP", "needs root or CAP_BPF", "msg=serving")
	out, err = unprivileged("--require-xdp")
	if err == nil || !strings.Contains(out, "--require-xdp") {
		t.Fatalf("unprivileged serve --require-xdp: %v\n%s", err, out)
	}
}

// unprivilegedServe prepares a namespace pair and a ring that uid 65534
// can read, and returns a function that runs this binary as
// `ringfire serve` there as uid 65534 without capabilities, with flags,
// then extra, and returns its output.
func unprivilegedServe(t *testing.T, flags ...string) func(extra ...string) (string, error) {
	t.Helper()
	netns.Require(t)
	p := netns.NewPair(t)
	dir, err := os.MkdirTemp("", "rf-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := filepath.Join(dir, "ringfire")
	copyExecutable(t, exe)
	ring := filepath.Join(dir, "ring")
	mustRun(t, "gen", ring, "--count", "100", "--size", "56")
	for _, f := range []string{dir, ring} {
		if err := os.Chmod(f, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return func(extra ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		args := []string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
			exe, "serve", ring, "--bind", p.AAddr.String() + ":7400", "--multicast", "239.255.0.1:7401",
			"--iface", p.AAddr.String(), "--duration", "500ms"}
		cmd := p.A.Run(ctx, "setpriv", append(append(args, flags...), extra...)...)
		cmd.Env = append(os.Environ(), "RINGFIRE_TEST_MAIN=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
