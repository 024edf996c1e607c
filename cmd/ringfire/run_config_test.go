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

	"github.com/ringfire/ringfire/internal/supervisor"
)

// A bad file is refused before anything starts, with the file, the line
// and the key named, and exit status 2: the keys serve's and mirror's
// flags refuse, and the parser's errors (internal/supervisor's tests
// hold the rest of those).
func TestRunConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", "[[serve]]\nring = \"/dev/shm/a\"\nudp = 7403\nbogus = 1\n", `:4: key "bogus": unknown key in [[serve]]`},
		{"wrong type", "[[serve]]\nring = \"/dev/shm/a\"\nudp = \"7403\"\n", `:3: key "udp": want an integer, got a string`},
		{"wrong type bool", "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nunicast = \"yes\"\n", `:4: key "unicast": want a boolean, got a string`},
		{"duration type", "[[serve]]\nring = \"/dev/shm/a\"\nwait = 3\n", `:3: key "wait": want a string, got an integer`},
		{"flag check", "[[serve]]\nring = \"/dev/shm/a\"\nttl = 300\n", `:3: key "ttl": --ttl 300: want 1..255`},
		{"bad value", "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nfrom = \"yesterday\"\n", `:4: key "from": --from "yesterday"`},
		{"bad source", "[[mirror]]\nring = \"/dev/shm/a\"\nsource = \"nowhere\"\n", `:3: key "source": SOURCE "nowhere"`},
		{"process-wide in a table", "[[serve]]\nring = \"/dev/shm/a\"\nmetrics = \":9464\"\n", `:3: key "metrics": is process-wide`},
		{"syntax", "[[serve]]\nring = \"/dev/shm/a\"\nudp = = 1\n", `:3: unexpected character`},
		{"same udp port", "[[serve]]\nring = \"/dev/shm/a\"\nbind = \":7400\"\nudp = 7403\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \":7410\"\nmulticast = \"239.1.1.1:7403\"\n", `:8: key "multicast": UDP port 7403 is another [[serve]]'s already (line 4)`},
		{"line B's port another's udp", "[[serve]]\nring = \"/dev/shm/a\"\nbind = \":7400\"\nudp = 7403\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \":7410\"\nmulticast = \"239.1.1.1:7404\"\nmulticast-b = \"239.1.2.1:7403\"\niface-b = \"10.0.1.5\"\n", `:9: key "multicast-b": UDP port 7403 is another [[serve]]'s already (line 4)`},
		{"udp on another's line B", "[[serve]]\nring = \"/dev/shm/a\"\nbind = \":7400\"\nmulticast = \"239.1.1.1:7401\"\nmulticast-b = \"239.1.2.1:7402\"\niface-b = \"10.0.1.5\"\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \":7410\"\nudp = 7402\n", `:10: key "udp": UDP port 7402 is another [[serve]]'s already (line 5)`},
		{"same unix socket", "[[serve]]\nring = \"/dev/shm/a\"\nunix = \"/run/a.sock\"\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \":7410\"\nunix = \"/run/a.sock\"\n", `:7: key "unix": /run/a.sock is another [[serve]]'s socket already (line 3)`},
		{"same bind", "[[serve]]\nring = \"/dev/shm/a\"\n[[serve]]\nring = \"/dev/shm/b\"\n", `:3: key "bind": 0.0.0.0:7400 is another [[serve]]'s already (line 1)`},
		{"empty", "# nothing\n", `the file has no [[serve]], [[mirror]] or [[record]] table`},
		{"log format", "log-format = \"xml\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `--log-format "xml"`},
		{"wait with loop", "loop = \"yield\"\n[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nwait = \"spin\"\n", `:5: key "wait": every table runs on the loop`},
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
	c, err := supervisor.Parse("example.toml", []byte(runExample))
	if err == nil {
		err = checkLoopKeys(c)
	}
	if err == nil {
		err = checkPorts(c)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(tablesOf(c, supervisor.Serve)) != 3 || len(tablesOf(c, supervisor.Mirror)) != 2 || len(tablesOf(c, supervisor.Record)) != 1 || c.Metrics == "" {
		t.Fatalf("example: %+v", c)
	}
	b := newUnitBuilder(discardLogger())
	for i := range c.Tables {
		u, err := b.build(c, &c.Tables[i])
		if err != nil && !strings.Contains(err.Error(), "--iface") {
			t.Errorf("table on line %d: %v", c.Tables[i].Line, err)
		}
		if u != nil {
			u.Discard()
		}
	}
	if !servedAndMirrored(c, "/dev/shm/refdata") || servedAndMirrored(c, "/dev/shm/quotes") {
		t.Error("the example's hub is not seen as one")
	}
}

// serve's /readyz waits for its ring to listen; /mirrors names the rings
// it serves. (ringfire run's health is its supervisor's: tested there.)
func TestServeReady(t *testing.T) {
	var s unitSet
	u := &serveUnit{name: "a", live: new(liveServer)}
	s.addServe(u)
	if err := s.ready(); err == nil || !strings.Contains(err.Error(), "serve a: not listening yet") {
		t.Fatalf("ready: %v", err)
	}
	if s.healthy() != nil {
		t.Fatal("serve is unhealthy")
	}
	if _, err := s.server("b"); err == nil || !strings.Contains(err.Error(), `no served ring named "b"`) {
		t.Fatalf("server(b): %v", err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tablesOf are the tables of one kind.
func tablesOf(c *supervisor.Config, kind string) []supervisor.Table {
	return slices.DeleteFunc(slices.Clone(c.Tables), func(t supervisor.Table) bool { return t.Kind != kind })
}
