package supervisor

import (
	"errors"
	"strings"
	"testing"
)

// A file's mistakes are ConfigErrors naming the file, the line and, when
// there is one, the key.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"duplicate ring", "[[serve]]\nring = \"/dev/shm/a\"\n\n[[serve]]\nname = \"b\"\nring = \"/dev/shm/a\"\n", `f.toml:6: key "ring": /dev/shm/a is in a [[serve]] already (line 1)`},
		{"duplicate name", "[[serve]]\nring = \"/dev/shm/x/a\"\n[[serve]]\nring = \"/dev/shm/y/a\"\n", `f.toml:3: a second [[serve]] named "a"`},
		{"duplicate key", "[[serve]]\nring = \"/dev/shm/a\"\nudp = 1\nudp = 2\n", `f.toml:4: key "udp": set again (first on line 3)`},
		{"no ring", "[[mirror]]\nsource = \"h:1\"\n", `f.toml:1: [[mirror]] needs a ring key`},
		{"no source", "[[mirror]]\nring = \"/dev/shm/a\"\n", `f.toml:1: [[mirror]] needs a source key`},
		{"no dir", "[[record]]\nring = \"/dev/shm/a\"\n", `f.toml:1: [[record]] needs a dir key`},
		{"dir type", "[[record]]\nring = \"/dev/shm/a\"\ndir = 3\n", `f.toml:3: key "dir": want a non-empty string, got an integer`},
		{"duplicate dir", "[[record]]\nring = \"/dev/shm/a\"\ndir = \"/var/a\"\n[[record]]\nring = \"/dev/shm/b\"\ndir = \"/var/a/\"\n",
			`f.toml:6: key "dir": /var/a/ is another [[record]]'s archive already (line 1)`},
		{"empty ring", "[[serve]]\nring = \"\"\n", `f.toml:2: key "ring": want a non-empty string, got a string`},
		{"ring type", "[[serve]]\nring = 3\n", `f.toml:2: key "ring": want a non-empty string, got an integer`},
		{"top-level unknown", "ring = \"/dev/shm/a\"\n", `f.toml:1: key "ring": unknown key at the top`},
		{"other table", "[serve]\nring = \"/dev/shm/a\"\n", `f.toml:1: table serve: want [[serve]], [[mirror]] or [[record]]`},
		{"other array", "[[client]]\nring = \"/dev/shm/a\"\n", `f.toml:1: table client: want [[serve]], [[mirror]] or [[record]]`},
		{"dotted", "[[serve]]\nring = \"/dev/shm/a\"\nx.y = 1\n", `f.toml:3: key "x.y": dotted keys are not used here`},
		{"syntax", "[[serve]]\nring = \"/dev/shm/a\"\nudp = = 1\n", `f.toml:3: unexpected character`},
		{"array value", "[[serve]]\nring = \"/dev/shm/a\"\nudp = [1, 2]\n", `f.toml:3: key "udp": want a string, an integer, a float or a boolean, got an array`},
		{"date value", "[[serve]]\nring = \"/dev/shm/a\"\nat = 1979-05-27\n", `got a date or time`},
		{"loop mode", "loop = \"fast\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `f.toml:1: key "loop": idle: unknown wait mode "fast"`},
		{"loop cpu type", "loop = \"yield\"\nloop-cpu = \"1\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `f.toml:2: key "loop-cpu": want a CPU number or -1, got a string 1`},
		{"loop cpu without a loop", "loop = \"none\"\nloop-cpu = 1\n[[serve]]\nring = \"/dev/shm/a\"\n", `f.toml:2: key "loop-cpu": pins the loop, and there is none`},
		{"loops without a loop", "loops = 2\n[[serve]]\nring = \"/dev/shm/a\"\nwait = \"yield\"\n", `f.toml:1: key "loops": counts loops, and there is none`},
		{"loop mode", "loop = \"fast\"\n[[serve]]\nring = \"/dev/shm/a\"\n", `or none (a thread per ring and direction)`},
		{"loops range", "loop = \"yield\"\nloops = 0\n[[serve]]\nring = \"/dev/shm/a\"\n", `f.toml:2: key "loops": want 1 to 64 loops, got an integer 0`},
		{"loops too many", "loop = \"yield\"\nloops = 65\n[[serve]]\nring = \"/dev/shm/a\"\n", `f.toml:2: key "loops": want 1 to 64 loops, got an integer 65`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.toml", []byte(c.text))
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a ConfigError containing %q", err, c.want)
			}
			if ce.File != "f.toml" || ce.Line == 0 {
				t.Errorf("error at %s:%d", ce.File, ce.Line)
			}
		})
	}
}

// A file without a table is ErrNoTables, naming the file.
func TestParseNoTables(t *testing.T) {
	_, err := Parse("f.toml", []byte("# nothing\nmetrics = \":9464\"\n"))
	if !errors.Is(err, ErrNoTables) || !strings.HasPrefix(err.Error(), "f.toml: ") {
		t.Fatalf("err %v, want f.toml: %v", err, ErrNoTables)
	}
}

// Parse keeps the process-wide keys, each table's ring, source and name
// with their lines, and the other keys in order as text of their kind.
func TestParse(t *testing.T) {
	c, err := Parse("f.toml", []byte(`metrics = "127.0.0.1:9464"
log-format = "json"
loop = "yield"
loops = 2
loop-cpu = 3

[[serve]]
ring = "/dev/shm/quotes"
udp = 0x1ceb
require-xdp = true
ratio = 1.5

[[mirror]]
source = "10.0.0.2:7400"
ring = "/dev/shm/orders"
name = "o"
from = "resume"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.File != "f.toml" || c.Metrics != "127.0.0.1:9464" || c.LogFormat != "json" || c.Loop != "yield" || c.Loops != 2 || c.LoopCPU != 3 {
		t.Errorf("top keys %+v", c)
	}
	if len(c.Tables) != 2 {
		t.Fatalf("%d tables", len(c.Tables))
	}
	s, m := &c.Tables[0], &c.Tables[1]
	if s.Kind != Serve || s.Line != 7 || s.Name != "quotes" || s.Ring != "/dev/shm/quotes" || s.Unit() != "serve quotes" || s.KeyLine("ring") != 8 {
		t.Errorf("serve table %+v", s)
	}
	want := []KeyValue{{"udp", Integer, "7403", 9}, {"require-xdp", Bool, "true", 10}, {"ratio", Float, "1.5", 11}}
	if len(s.Keys) != len(want) {
		t.Fatalf("serve keys %+v", s.Keys)
	}
	for i, kv := range want {
		if s.Keys[i] != kv {
			t.Errorf("serve key %d: %+v, want %+v", i, s.Keys[i], kv)
		}
	}
	if m.Kind != Mirror || m.Name != "o" || m.Source != "10.0.0.2:7400" || m.Unit() != "mirror o" || m.KeyLine("source") != 14 ||
		len(m.Keys) != 1 || m.Keys[0] != (KeyValue{"from", String, "resume", 17}) {
		t.Errorf("mirror table %+v", m)
	}

	r, err := Parse("f.toml", []byte("[[record]]\nring = \"/dev/shm/a\"\ndir = \"/var/a\"\nsync = \"segment\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rt := &r.Tables[0]; rt.Kind != Record || rt.Dir != "/var/a" || rt.Unit() != "record a" || rt.KeyLine("dir") != 3 ||
		len(rt.Keys) != 1 || rt.Keys[0] != (KeyValue{"sync", String, "segment", 4}) {
		t.Errorf("record table %+v", rt)
	}

	d, err := Parse("f.toml", []byte("[[serve]]\nring = \"/dev/shm/a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Loop != DefaultLoop || d.Loops != 1 || d.LoopCPU != -1 || d.Metrics != "" {
		t.Errorf("defaults %+v", d)
	}
}

// TestDefaultLoop: a file without a loop key runs on DefaultLoop, unless
// a table has a wait of its own (a file written before the default: a
// thread per ring, as then) or the key says none.
func TestDefaultLoop(t *testing.T) {
	for _, c := range []struct {
		name, file, loop string
		loops            int
	}{
		{"no key", "[[serve]]\nring = \"/dev/shm/a\"\n[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/b\"\n", DefaultLoop, 1},
		{"loops alone", "loops = 2\n[[serve]]\nring = \"/dev/shm/a\"\n", DefaultLoop, 2},
		{"a table's wait", "[[serve]]\nring = \"/dev/shm/a\"\n[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/b\"\nwait = \"yield\"\n", "", 1},
		{"a table's cpu", "[[serve]]\nring = \"/dev/shm/a\"\ncpu = 1\n", "", 1},
		{"none", "loop = \"none\"\n[[serve]]\nring = \"/dev/shm/a\"\n", "", 1},
		{"yield", "loop = \"yield\"\n[[serve]]\nring = \"/dev/shm/a\"\n", "yield", 1},
	} {
		cfg, err := Parse("f.toml", []byte(c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.Loop != c.loop || cfg.Loops != c.loops {
			t.Errorf("%s: loop %q, loops %d; want %q, %d", c.name, cfg.Loop, cfg.Loops, c.loop, c.loops)
		}
	}
}
