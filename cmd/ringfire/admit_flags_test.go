package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/supervisor"
	"github.com/ringfire/ringfire/replica"
)

// serve's admission flags are validated with an error naming them, are
// in --help, and are keys of a [[serve]] table of ringfire run.
func TestAdmissionFlags(t *testing.T) {
	dir := t.TempDir()
	ring := filepath.Join(dir, "ring")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-pending-per-addr", "0"}, "--max-pending-per-addr 0: want at least 1, or -1"},
		{[]string{"--max-pending-per-addr", "-2"}, "--max-pending-per-addr -2"},
		{[]string{"--handshake-timeout", "10ms"}, "--handshake-timeout 10ms: want 100ms..5m"},
		{[]string{"--handshake-timeout", "6m"}, "--handshake-timeout 6m0s: want 100ms..5m"},
	} {
		_, _, err := runCmd(t, append([]string{"serve", ring}, c.args...)...)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	_, stderr, err := runCmd(t, "serve", "--help")
	if err != nil || !strings.Contains(stderr, "--max-pending-per-addr") || !strings.Contains(stderr, "--handshake-timeout") {
		t.Errorf("serve --help: %v\n%s", err, stderr)
	}

	cfg, err := supervisor.Parse("admit.toml", []byte("[[serve]]\nring = \"/dev/shm/a\"\nhandshake-timeout = \"1500ms\"\nmax-pending-per-addr = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := serveUnitOf(&cfg.Tables[0], discardLogger(), "")
	if err != nil {
		t.Fatal(err)
	}
	if u.cfg.HandshakeTimeout != 1500*time.Millisecond || u.cfg.MaxPendingPerAddr != 3 {
		t.Fatalf("the table's keys: %v, %d", u.cfg.HandshakeTimeout, u.cfg.MaxPendingPerAddr)
	}
	file := filepath.Join(dir, "bad.toml")
	writeFile(t, file, "[[serve]]\nring = \"/dev/shm/a\"\nhandshake-timeout = \"1ms\"\n")
	if _, _, err := runCmd(t, "run", file); err == nil || !strings.Contains(err.Error(), `:3: key "handshake-timeout": --handshake-timeout 1ms`) {
		t.Fatalf("run with a bad handshake-timeout: %v", err)
	}
	// The defaults are the library's.
	d, err := supervisor.Parse("default.toml", []byte("[[serve]]\nring = \"/dev/shm/a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	u3, err := serveUnitOf(&d.Tables[0], discardLogger(), "")
	if err != nil {
		t.Fatal(err)
	}
	if u3.cfg.HandshakeTimeout != replica.DefaultHandshakeTimeout || u3.cfg.MaxPendingPerAddr != replica.DefaultMaxPendingPerAddr {
		t.Fatalf("defaults: %v, %d", u3.cfg.HandshakeTimeout, u3.cfg.MaxPendingPerAddr)
	}
}

// serve's counters say how many connections were refused, by kind.
func TestServeStatsAdmission(t *testing.T) {
	var b strings.Builder
	printServerStats(&b, replica.ServerStats{Refused: 9, RefusedAddrPending: 4, Evicted: 2, HandshakeTimeouts: 3}, false)
	want := "admission: refused 9 (max conns 0, per address 0, pending per address 4, evicted 2, handshake timeouts 3)"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("printed:\n%s\nwant %q", b.String(), want)
	}
}
