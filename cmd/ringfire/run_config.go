package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/ringfire/ringfire/replica"
)

// runConfig is a ringfire run file: process-wide keys at the top, then one
// [[serve]] table per served ring and one [[mirror]] table per mirror.
//
// It is read with go-toml's parser rather than decoded into a struct: a
// table's keys are serve's or mirror's flags, checked by those flag sets
// (so a key means exactly what the flag means), and every error names the
// line of the key at fault, which the parser's ranges give.
type runConfig struct {
	file      string
	metrics   string // top-level key metrics
	logFormat string // top-level key log-format
	// loop (top-level key loop, a wait mode; "": none) runs every serve
	// and mirror on one replica.Loop, pinned to loopCPU (key loop-cpu;
	// -1: not pinned).
	loop       string
	loopCPU    int
	loopCPUSet int // the line of loop-cpu (0: absent)
	// loops (key loops, default 1) is how many Loops share the units,
	// each unit on one of them; loop i is pinned to loopCPU + i.
	loops    int
	loopsSet int // the line of loops (0: absent)
	tables   []tableSpec
}

// tableSpec is one [[serve]] or [[mirror]] table.
type tableSpec struct {
	kind   string // "serve" or "mirror"
	line   int    // of its [[header]]
	name   string // key name, else the ring's base name
	ring   string
	source string // mirror: the serve's TCP address
	keys   []keyValue
	lines  map[string]int // of ring, source and name
	file   string
}

// keyValue is one key of a table other than ring, source and name: a flag
// of serve or mirror and its value as a flag argument.
type keyValue struct {
	key  string
	kind unstable.Kind
	text string
	line int
}

// topKeys are the process-wide keys.
var topKeys = []string{"metrics", "log-format", "loop", "loops", "loop-cpu"}

// maxLoops bounds the loops key: a loop is a polling thread.
const maxLoops = 64

// loopKeys are the table keys a loop key replaces: every unit then waits
// and runs as the loop does.
var loopKeys = map[string]bool{"wait": true, "spin": true, "cpu": true}

// processWide are serve and mirror flags that ringfire run takes once, at
// the top of the file, or not at all.
var processWide = map[string]string{
	"metrics":        "is process-wide: set it at the top of the file",
	"log-format":     "is process-wide: set it at the top of the file",
	"loop":           "is process-wide: set it at the top of the file",
	"loop-cpu":       "is process-wide: set it at the top of the file",
	"loops":          "is process-wide: set it at the top of the file",
	"duration":       "is not a key of ringfire run (it runs until SIGTERM)",
	"stats-interval": "is not a key of ringfire run (read the counters from the metrics endpoint)",
	"json":           "is not a key of ringfire run (read the counters from the metrics endpoint)",
}

// configError is a mistake in the file: it names the file, the line and,
// when there is one, the key.
type configError struct {
	file string
	line int
	key  string
	msg  string
}

func (e *configError) Error() string {
	if e.key == "" {
		return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg)
	}
	return fmt.Sprintf("%s:%d: key %q: %s", e.file, e.line, e.key, e.msg)
}

// unit names the unit a table describes, across reloads.
func (t *tableSpec) unit() string { return t.kind + " " + t.name }

// fingerprint changes when anything in the table does: a changed table's
// unit restarts alone.
func (t *tableSpec) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s", t.kind, t.name, t.ring, t.source)
	for _, kv := range t.keys {
		fmt.Fprintf(&b, "\x00%s=%d:%s", kv.key, kv.kind, kv.text)
	}
	return b.String()
}

func (t *tableSpec) errorf(line int, key, format string, args ...any) error {
	return &configError{file: t.file, line: line, key: key, msg: fmt.Sprintf(format, args...)}
}

// parseRunConfig parses data, the contents of file.
func parseRunConfig(file string, data []byte) (*runConfig, error) {
	c := &runConfig{file: file, loopCPU: -1, loops: 1}
	var p unstable.Parser
	p.Reset(data)
	var cur *tableSpec
	seen := map[string]int{} // the current table's keys and their lines
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.ArrayTable, unstable.Table:
			name, line := keyOf(&p, e)
			if e.Kind == unstable.Table || (name != "serve" && name != "mirror") {
				return nil, &configError{file, line, "", fmt.Sprintf("table %s: want [[serve]] or [[mirror]]", name)}
			}
			c.tables = append(c.tables, tableSpec{kind: name, line: line, file: file, lines: map[string]int{}})
			cur, seen = &c.tables[len(c.tables)-1], map[string]int{}
		case unstable.KeyValue:
			key, line := keyOf(&p, e)
			if at, dup := seen[key]; dup {
				return nil, &configError{file, line, key, fmt.Sprintf("set again (first on line %d)", at)}
			}
			seen[key] = line
			if err := c.set(cur, key, line, e.Value()); err != nil {
				return nil, err
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, syntaxError(&p, file, err)
	}
	return c, c.check()
}

// set stores key = v of table t (nil: the top of the file).
func (c *runConfig) set(t *tableSpec, key string, line int, v *unstable.Node) error {
	text, err := valueText(v)
	if err != nil {
		return &configError{c.file, line, key, err.Error()}
	}
	if strings.Contains(key, ".") {
		return &configError{c.file, line, key, "dotted keys are not used here"}
	}
	str := func() (string, error) {
		if v.Kind != unstable.String || text == "" {
			return "", &configError{c.file, line, key, fmt.Sprintf("want a non-empty string, got %s", kindName(v.Kind))}
		}
		return text, nil
	}
	if t == nil {
		switch key {
		case "metrics":
			c.metrics, err = str()
		case "log-format":
			c.logFormat, err = str()
		case "loop":
			if c.loop, err = str(); err == nil {
				if _, perr := replica.ParseWaitMode(c.loop); perr != nil {
					err = &configError{c.file, line, key, perr.Error()}
				}
			}
		case "loop-cpu":
			n, perr := strconv.Atoi(text)
			if v.Kind != unstable.Integer || perr != nil || n < -1 {
				return &configError{c.file, line, key, fmt.Sprintf("want a CPU number or -1, got %s %s", kindName(v.Kind), text)}
			}
			c.loopCPU, c.loopCPUSet = n, line
		case "loops":
			n, perr := strconv.Atoi(text)
			if v.Kind != unstable.Integer || perr != nil || n < 1 || n > maxLoops {
				return &configError{c.file, line, key, fmt.Sprintf("want 1 to %d loops, got %s %s", maxLoops, kindName(v.Kind), text)}
			}
			c.loops, c.loopsSet = n, line
		default:
			return &configError{c.file, line, key, fmt.Sprintf("unknown key at the top of the file: want %s, or a [[serve]] or [[mirror]] table", strings.Join(topKeys, " or "))}
		}
		return err
	}
	t.lines[key] = line
	switch {
	case key == "ring":
		t.ring, err = str()
	case key == "name":
		t.name, err = str()
	case key == "source" && t.kind == "mirror":
		t.source, err = str()
	default:
		t.keys = append(t.keys, keyValue{key: key, kind: v.Kind, text: text, line: line})
	}
	return err
}

// check checks what needs the whole file: every table has its ring (and
// source), and names and rings are not given twice.
func (c *runConfig) check() error {
	names := map[string]int{}
	rings := map[string]int{}
	for i := range c.tables {
		t := &c.tables[i]
		switch {
		case t.ring == "":
			return t.errorf(t.line, "", "[[%s]] needs a ring key (the ring's path)", t.kind)
		case t.kind == "mirror" && t.source == "":
			return t.errorf(t.line, "", "[[mirror]] needs a source key (HOST:PORT of the serve)")
		}
		if t.name == "" {
			t.name = ringName(t.ring)
		}
		ring := t.kind + "\x00" + t.ring
		if at, dup := rings[ring]; dup {
			return t.errorf(t.lines["ring"], "ring", "%s is in a [[%s]] already (line %d)", t.ring, t.kind, at)
		}
		rings[ring] = t.line
		if at, dup := names[t.unit()]; dup {
			return t.errorf(t.line, "", "a second [[%s]] named %q (the first is on line %d): give one a name key", t.kind, t.name, at)
		}
		names[t.unit()] = t.line
	}
	if err := c.checkLoop(); err != nil {
		return err
	}
	return c.checkPorts()
}

// checkLoop refuses loop-cpu without loop, and a table's own wait mode or
// CPU when every table runs on the loop.
func (c *runConfig) checkLoop() error {
	if c.loop == "" {
		if c.loopCPUSet > 0 {
			return &configError{c.file, c.loopCPUSet, "loop-cpu", "pins the loop: set loop too"}
		}
		if c.loopsSet > 0 {
			return &configError{c.file, c.loopsSet, "loops", "counts loops: set loop too"}
		}
		return nil
	}
	for i := range c.tables {
		t := &c.tables[i]
		for _, kv := range t.keys {
			if loopKeys[kv.key] {
				return t.errorf(kv.line, kv.key, "every table runs on the loop (key loop at the top): its wait mode and loop-cpu apply")
			}
		}
	}
	return nil
}

// checkPorts refuses two [[serve]] tables on one TCP address, one Unix
// socket or one UDP port: the second could never start (the kernel refuses the address,
// an interface's AF_XDP transports steer by port).
func (c *runConfig) checkPorts() error {
	binds := map[string]int{}
	ports := map[string]int{}
	socks := map[string]int{}
	for i := range c.tables {
		t := &c.tables[i]
		if t.kind != "serve" {
			continue
		}
		bind, bindLine := "0.0.0.0:7400", t.line // serve's default
		for _, kv := range t.keys {
			var port string
			switch kv.key {
			case "bind":
				bind, bindLine = kv.text, kv.line
			case "unix":
				if at, dup := socks[kv.text]; dup {
					return t.errorf(kv.line, kv.key, "%s is another [[serve]]'s socket already (line %d): each served ring needs its own", kv.text, at)
				}
				socks[kv.text] = kv.line
			case "udp":
				port = kv.text
			case "multicast":
				if j := strings.LastIndexByte(kv.text, ':'); j >= 0 {
					port = kv.text[j+1:]
				}
			}
			if port == "" || port == "0" {
				continue
			}
			if at, dup := ports[port]; dup {
				return t.errorf(kv.line, kv.key, "UDP port %s is another [[serve]]'s already (line %d): each served ring needs its own", port, at)
			}
			ports[port] = kv.line
		}
		if at, dup := binds[bind]; dup {
			return t.errorf(bindLine, "bind", "%s is another [[serve]]'s already (line %d): each served ring needs its own TCP address", bind, at)
		}
		binds[bind] = bindLine
	}
	return nil
}

// valueText is a value as a flag argument: strings as they are, integers,
// floats and booleans as TOML wrote them.
func valueText(v *unstable.Node) (string, error) {
	switch v.Kind {
	case unstable.String:
		return string(v.Data), nil
	case unstable.Integer:
		n, err := strconv.ParseInt(string(v.Data), 0, 64)
		if err != nil {
			return "", fmt.Errorf("integer %s: %w", v.Data, err)
		}
		return strconv.FormatInt(n, 10), nil
	case unstable.Float, unstable.Bool:
		return string(v.Data), nil
	}
	return "", fmt.Errorf("want a string, an integer, a float or a boolean, got %s", kindName(v.Kind))
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Bool:
		return "a boolean"
	case unstable.Array:
		return "an array"
	case unstable.InlineTable:
		return "an inline table"
	}
	return "a date or time"
}

// keyOf is the (dotted) key of a table header or key/value and its line.
func keyOf(p *unstable.Parser, e *unstable.Node) (string, int) {
	var parts []string
	line := 0
	for it := e.Key(); it.Next(); {
		n := it.Node()
		parts = append(parts, string(n.Data))
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
	}
	return strings.Join(parts, "."), line
}

// syntaxError adds the line to a parser error.
func syntaxError(p *unstable.Parser, file string, err error) error {
	pe, ok := err.(*unstable.ParserError)
	if !ok || len(pe.Highlight) == 0 {
		return fmt.Errorf("%s: %w", file, err)
	}
	line := 1 + bytes.Count(p.Data()[:p.Range(pe.Highlight).Offset], []byte("\n"))
	return &configError{file: file, line: line, msg: pe.Message}
}
