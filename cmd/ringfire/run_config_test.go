package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// A bad file is refused before anything starts, with the file, the line
// and the key named, and exit status 2.
func TestRunConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", "[[serve]]\nring = \"/dev/shm/a\"\nudp = 7403\nbogus = 1\n", `:4: key "bogus": unknown key in [[serve]]`},
		{"wrong type", "[[serve]]\nring = \"/dev/shm/a\"\nudp = \"7403\"\n", `:3: key "udp": want an integer, got a string`},
		{"wrong type bool", "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nunicast = \"yes\"\n", `:4: key "unicast": want a boolean, got a string`},
		{"duration type", "[[serve]]\nring = \"/dev/shm/a\"\nwait = 3\n", `:3: key "wait": want a string, got an integer`},
		{"duplicate ring", "[[serve]]\nring = \"/dev/shm/a\"\n\n[[serve]]\nname = \"b\"\nring = \"/dev/shm/a\"\n", `:6: key "ring": /dev/shm/a is in a [[serve]] already (line 1)`},
		{"duplicate name", "[[serve]]\nring = \"/dev/shm/x/a\"\n[[serve]]\nring = \"/dev/shm/y/a\"\n", `:3: a second [[serve]] named "a"`},
		{"duplicate key", "[[serve]]\nring = \"/dev/shm/a\"\nudp = 1\nudp = 2\n", `:4: key "udp": set again (first on line 3)`},
		{"flag check", "[[serve]]\nring = \"/dev/shm/a\"\nttl = 300\n", `:3: key "ttl": --ttl 300: want 1..255`},
		{"bad value", "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nfrom = \"yesterday\"\n", `:4: key "from": --from "yesterday"`},
		{"bad source", "[[mirror]]\nring = \"/dev/shm/a\"\nsource = \"nowhere\"\n", `:3: key "source": SOURCE "nowhere"`},
		{"no ring", "[[mirror]]\nsource = \"h:1\"\n", `:1: [[mirror]] needs a ring key`},
		{"no source", "[[mirror]]\nring = \"/dev/shm/a\"\n", `:1: [[mirror]] needs a source key`},
		{"process-wide in a table", "[[serve]]\nring = \"/dev/shm/a\"\nmetrics = \":9464\"\n", `:3: key "metrics": is process-wide`},
		{"top-level unknown", "ring = \"/dev/shm/a\"\n", `:1: key "ring": unknown key at the top`},
		{"other table", "[serve]\nring = \"/dev/shm/a\"\n", `:1: table serve: want [[serve]] or [[mirror]]`},
		{"syntax", "[[serve]]\nring = \"/dev/shm/a\"\nudp = = 1\n", `:3: unexpected character`},
		{"array value", "[[serve]]\nring = \"/dev/shm/a\"\nudp = [1, 2]\n", `:3: key "udp": want a string, an integer, a float or a boolean, got an array`},
		{"same udp port", "[[serve]]\nring = \"/dev/shm/a\"\nbind = \":7400\"\nudp = 7403\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \":7410\"\nmulticast = \"239.1.1.1:7403\"\n", `:8: key "multicast": UDP port 7403 is another [[serve]]'s already (line 4)`},
		{"same unix socket", "[[serve]]\nring = \"/dev/shm/a\"\nunix = \"/run/a.sock\"\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \":7410\"\nunix = \"/run/a.sock\"\n", `:7: key "unix": /run/a.sock is another [[serve]]'s socket already (line 3)`},
		{"same bind", "[[serve]]\nring = \"/dev/shm/a\"\n[[serve]]\nring = \"/dev/shm/b\"\n", `:3: key "bind": 0.0.0.0:7400 is another [[serve]]'s already (line 1)`},
		{"empty", "# nothing\n", `the file has no [[serve]] or [[mirror]] table`},
		{"log format", "log-format = \"xml\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `--log-format "xml"`},
		{"loop mode", "loop = \"fast\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `:1: key "loop": idle: unknown wait mode "fast"`},
		{"loop cpu type", "loop = \"yield\"\nloop-cpu = \"1\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `:2: key "loop-cpu": want a CPU number or -1, got a string 1`},
		{"loop cpu alone", "loop-cpu = 1\n[[serve]]\nring = \"/dev/shm/a\"\n", `:1: key "loop-cpu": pins the loop: set loop too`},
		{"wait with loop", "loop = \"yield\"\n[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nwait = \"spin\"\n", `:5: key "wait": every table runs on the loop`},
		{"loops alone", "loops = 2\n[[serve]]\nring = \"/dev/shm/a\"\n", `:1: key "loops": counts loops: set loop too`},
		{"loops range", "loop = \"yield\"\nloops = 0\n[[serve]]\nring = \"/dev/shm/a\"\n", `:2: key "loops": want 1 to 64 loops, got an integer 0`},
		{"loop in a table", "[[serve]]\nring = \"/dev/shm/a\"\nloop = \"yield\"\n", `:3: key "loop": is process-wide`},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".toml")
			writeFile(t, file, c.text)
			_, _, err := runCmd(t, "run", file)
			var ue *usageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a usage error containing %q", err, c.want)
			}
			if !strings.Contains(err.Error(), file) && c.name != "log format" {
				t.Errorf("err %v does not name the file", err)
			}
		})
	}
}

// A FIFO or a directory is refused without blocking; a missing file is
// an error.
func TestRunConfigNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir} {
		if _, _, err := runCmd(t, "run", p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("run %s: %v", p, err)
		}
	}
	if _, _, err := runCmd(t, "run", filepath.Join(dir, "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run of a missing file: %v", err)
	}
}

// The example parses, and every table in it passes its flag checks.
func TestRunExampleParses(t *testing.T) {
	c, err := parseRunConfig("example.toml", []byte(runExample))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.tablesOf("serve")) != 3 || len(c.tablesOf("mirror")) != 2 || c.metrics == "" {
		t.Fatalf("example: %+v", c)
	}
	e := newEngine(discardLogger())
	for i := range c.tables {
		u, err := e.build(&c.tables[i], c)
		if err != nil && !strings.Contains(err.Error(), "--iface") {
			t.Errorf("table on line %d: %v", c.tables[i].line, err)
		}
		u.discard()
	}
	if !servedAndMirrored(c, "/dev/shm/refdata") || servedAndMirrored(c, "/dev/shm/quotes") {
		t.Error("the example's hub is not seen as one")
	}
}

// /readyz waits for every serve to listen and every mirror to connect;
// /healthz names a failed unit.
func TestReadyAndHealthy(t *testing.T) {
	var s unitSet
	u := &serveUnit{name: "a", live: new(liveServer)}
	s.addServe(u)
	if err := s.ready(); err == nil || !strings.Contains(err.Error(), "serve a: not listening yet") {
		t.Fatalf("ready: %v", err)
	}
	if s.healthy() != nil {
		t.Fatal("healthy before any failure")
	}
	s.setFailed("serve a", errors.New("address in use"))
	if err := s.healthy(); err == nil || !strings.Contains(err.Error(), "serve a: address in use") {
		t.Fatalf("healthy: %v", err)
	}
	s.setFailed("serve a", nil)
	if s.healthy() != nil {
		t.Fatal("still unhealthy once the unit runs")
	}
	if _, err := s.server("b"); err == nil || !strings.Contains(err.Error(), `no served ring named "b"`) {
		t.Fatalf("server(b): %v", err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tablesOf are the tables of one kind.
func (c *runConfig) tablesOf(kind string) []tableSpec {
	return slices.DeleteFunc(slices.Clone(c.tables), func(t tableSpec) bool { return t.kind != kind })
}
