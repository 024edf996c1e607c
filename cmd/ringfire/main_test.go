package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCmd runs the CLI in process with a bounded context.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	err = run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

// mustRun runs the CLI and fails the test on an error.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := runCmd(t, args...)
	if err != nil {
		t.Fatalf("ringfire %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// genRing writes a ring with gen and returns its path.
func genRing(t *testing.T, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring")
	mustRun(t, append([]string{"gen", path}, args...)...)
	return path
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

func TestTopLevelHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		out, stderr, err := runCmd(t, arg)
		if err != nil || out != "" {
			t.Fatalf("%s: err %v, stdout %q", arg, err, out)
		}
		wantContains(t, arg, stderr, "usage: ringfire COMMAND", "stat", "top", "dump", "prune", "gen", "tail")
	}
	_, stderr, err := runCmd(t, "help", "dump")
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "help dump", stderr, "usage: ringfire dump", "--tail")
}

func TestSubcommandHelp(t *testing.T) {
	flags := map[string][]string{
		"stat":   {"--json"},
		"top":    {"--interval-ms", "--iterations"},
		"dump":   {"--tail", "--hex"},
		"prune":  {},
		"gen":    {"--rate", "--count", "--size", "--capacity", "--lossless", "--replace"},
		"tail":   {"--from", "--count", "--timeout", "--quiet"},
		"serve":  {"--bind", "--multicast", "--iface", "--ttl", "--udp", "--dup", "--mtu", "--batch", "--linger-us", "--spin"},
		"mirror": {"--from", "--iface", "--unicast", "--tcp", "--once", "--reconnect-ms", "--spin", "--no-telemetry"},
	}
	synopsis := map[string]string{"mirror": "SOURCE PATH"}
	synopsis["mirrors"], flags["mirrors"] = "ADDR", []string{"--json", "--timeout"}
	synopsis["keygen"] = "FILE"
	synopsis["clean"], flags["clean"] = "[PATH] [--dry-run]", []string{"--dry-run"}
	synopsis["run"], flags["run"] = "CONFIG", []string{"--print-example", "--log-format"}
	synopsis["mirrors"] = "ADDR [RING]"
	synopsis["record"], flags["record"] = "RING DIR", []string{"--from", "--sync", "--segment-size", "--compress", "--max-bytes", "--max-age", "--flush-delay", "--metrics"}
	synopsis["replay"], flags["replay"] = "DIR RING", []string{"--epoch", "--from", "--to", "--speed", "--replace", "--follow", "--max-size"}
	synopsis["archive"] = "stat|verify|dump DIR"
	flags["serve"] = append(flags["serve"], "--log-format", "--once")
	flags["serve"] = append(flags["serve"], "--key", "--encrypt", "--max-conns", "--wide-multicast")
	for _, c := range commands {
		for _, h := range []string{"--help", "-h"} {
			_, stderr, err := runCmd(t, c.Name, h)
			if err != nil {
				t.Fatalf("%s %s: %v", c.Name, h, err)
			}
			syn := synopsis[c.Name]
			if syn == "" {
				syn = "PATH"
			}
			wantContains(t, c.Name+" "+h, stderr, append([]string{"usage: ringfire " + c.Name + " " + syn}, flags[c.Name]...)...)
			if len(strings.Fields(stderr)) < 40 {
				t.Errorf("%s help has no real description:\n%s", c.Name, stderr)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	ring := filepath.Join(dir, "ring")
	tests := []struct {
		args []string
		want string
	}{
		{nil, "missing command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"stat"}, "missing PATH"},
		{[]string{"dump", "--hex"}, "missing PATH"},
		{[]string{"stat", ring, "extra"}, `unexpected argument "extra"`},
		{[]string{"stat", "--nope", ring}, "flag provided but not defined"},
		{[]string{"gen", ring, "--rate", "fast"}, `invalid value "fast"`},
		{[]string{"gen", ring, "--count", "-1"}, `invalid value "-1"`},
		{[]string{"gen", ring, "--size", "16"}, "minimum record size 32"},
		{[]string{"gen", ring, "--capacity", "100"}, "not a power of two"},
		{[]string{"gen", ring, "--capacity", "0"}, "not a power of two"},
		{[]string{"top", ring, "--interval-ms", "0"}, "--interval-ms must be at least 1"},
		{[]string{"top", ring, "--iterations", "x"}, `invalid value "x"`},
		{[]string{"dump", ring, "--tail", "0"}, "--tail must be at least 1"},
		{[]string{"tail", ring, "--from", "sideways"}, `--from "sideways"`},
		{[]string{"tail", ring, "--from", "0"}, `--from "0"`},
		{[]string{"tail", ring, "--timeout", "soon"}, `invalid value "soon"`},
		{[]string{"tail", ring, "--timeout", "-1s"}, "negative"},
		{[]string{"serve", ring, "--multicast", "239.1.1.1:0"}, `--multicast "239.1.1.1:0"`},
		{[]string{"serve", ring, "--ttl", "-1"}, "--ttl -1: want 1..255"},
		{[]string{"serve", ring, "--ttl", "256"}, "--ttl 256: want 1..255"},
		{[]string{"serve", ring, "--duration", "-1s"}, "--duration -1s"},
		{[]string{"serve", ring, "--stats-interval", "-1s"}, "--stats-interval -1s"},
		{[]string{"serve", ring, "--linger-us", "999999999999"}, "--linger-us 999999999999"},
		{[]string{"serve", ring, "--mtu", "10"}, "--mtu 10"},
		{[]string{"serve", ring, "--batch", "70000"}, "--batch 70000"},
		{[]string{"serve", ring, "--max-conns", "0"}, "--max-conns 0"},
		{[]string{"serve", ring, "--max-conns-per-addr", "-2"}, "--max-conns-per-addr -2"},
		{[]string{"serve", ring, "--max-pending", "0"}, "--max-pending 0"},
		{[]string{"mirror", "127.0.0.1:7400", ring, "--duration", "-1s"}, "--duration -1s"},
		{[]string{"mirror", "nohost", ring}, `SOURCE "nohost"`},
		{[]string{"mirror", "h:0", ring}, `port "0"`},
		{[]string{"mirror", "unix:", ring}, `SOURCE "unix:": no socket path`},
		{[]string{"mirror", "unix:/" + strings.Repeat("s", 120), ring}, "a Unix socket's holds at most 107"},
		{[]string{"mirror", "unix:/run/a.sock", ring, "--unicast"}, "--unicast: the Unix socket unix:/run/a.sock carries no datagrams"},
		{[]string{"mirror", "unix:/run/a.sock", ring, "--xdp", "eth0"}, "--xdp/--transport: the Unix socket"},
		{[]string{"serve", ring, "--unix", "@"}, `--unix "@": no socket path`},
		{[]string{"serve", ring, "--unix", "/" + strings.Repeat("s", 120)}, "--unix"},
	}
	for _, tt := range tests {
		_, _, err := runCmd(t, tt.args...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: err %v, want a usage error", tt.args, err)
			continue
		}
		wantContains(t, "error of "+strings.Join(tt.args, " "), err.Error(), tt.want)
		var stderr bytes.Buffer
		if code := exitCode(err, &stderr); code != 2 || !strings.HasPrefix(stderr.String(), "ringfire: ") {
			t.Errorf("%q: exit %d, stderr %q", tt.args, code, stderr.String())
		}
	}
	if _, err := os.Stat(ring); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a usage error created the ring: %v", err)
	}
}

func TestExitCode(t *testing.T) {
	var stderr bytes.Buffer
	if code := exitCode(nil, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("nil: %d %q", code, stderr.String())
	}
	_, _, err := runCmd(t, "stat", filepath.Join(t.TempDir(), "missing"))
	if code := exitCode(err, &stderr); code != 1 {
		t.Fatalf("missing file: exit %d", code)
	}
	wantContains(t, "stderr", stderr.String(), "ringfire: stat: open ring", "no such file")
}

func TestFlagsAfterPath(t *testing.T) {
	path := genRing(t, "--count", "3", "--capacity", "8")
	for _, args := range [][]string{
		{"stat", "--json", path},
		{"stat", path, "--json"},
		{"stat", "--json", "--", path},
	} {
		out := mustRun(t, args...)
		wantContains(t, strings.Join(args, " "), out, `"write_seq": 3`)
	}
	out := mustRun(t, "gen", filepath.Join(t.TempDir(), "r"), "--count", "5", "--size", "40", "--capacity", "16")
	wantContains(t, "gen", out, "wrote 5 records")
}

func TestNotARing(t *testing.T) {
	dir := t.TempDir()
	zeros := filepath.Join(dir, "zeros")
	if err := os.WriteFile(zeros, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"stat", "top", "dump", "prune", "tail"} {
		_, _, err := runCmd(t, cmd, zeros, "--timeout", "10ms")
		if cmd != "tail" {
			_, _, err = runCmd(t, cmd, zeros)
		}
		if err == nil {
			t.Fatalf("%s of a zero file succeeded", cmd)
		}
		wantContains(t, cmd+" error", err.Error(), cmd+": ", "field magic", "bad magic")
	}
	_, _, err := runCmd(t, "stat", short)
	if err == nil {
		t.Fatal("stat of a 5-byte file succeeded")
	}
	wantContains(t, "error", err.Error(), "field file size", "truncated")
}

// TestErrorPrefixOnce: an error the library already names by the
// subcommand is not prefixed twice ("mirror: mirror: connect ...").
func TestErrorPrefixOnce(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "ring")
	_, _, err := runCmd(t, "mirror", "127.0.0.1:1", ring, "--once", "--duration", "5s")
	if err == nil || !strings.HasPrefix(err.Error(), "mirror: ") || strings.Contains(err.Error(), "mirror: mirror:") {
		t.Fatalf("err %v, want one \"mirror: \" prefix", err)
	}
}
