package supervisor

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/ringfire/ringfire/internal/idle"
)

// topKeys are the process-wide keys.
var topKeys = []string{"metrics", "log-format", "loop", "loops", "loop-cpu"}

// MaxLoops bounds the loops key: a loop is a polling thread.
const MaxLoops = 64

// Parse parses data, the contents of file. It reads the file with
// go-toml's parser rather than decoding it into a struct: a table's other
// keys are the caller's (Table.Keys, in order), and every error is a
// *ConfigError naming the line of the key at fault, which the parser's
// ranges give. A file without a table is ErrNoTables.
func Parse(file string, data []byte) (*Config, error) {
	c := &Config{File: file, LoopCPU: -1, Loops: 1}
	var p unstable.Parser
	p.Reset(data)
	var cur *Table
	seen := map[string]int{} // the current table's keys and their lines
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.ArrayTable, unstable.Table:
			name, line := keyOf(&p, e)
			if e.Kind == unstable.Table || (name != Serve && name != Mirror && name != Record) {
				return nil, c.Errorf(line, "", "table %s: want [[serve]], [[mirror]] or [[record]]", name)
			}
			c.Tables = append(c.Tables, Table{Kind: name, Line: line, File: file, lines: map[string]int{}})
			cur, seen = &c.Tables[len(c.Tables)-1], map[string]int{}
		case unstable.KeyValue:
			key, line := keyOf(&p, e)
			if at, dup := seen[key]; dup {
				return nil, c.Errorf(line, key, "set again (first on line %d)", at)
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
	if err := c.check(); err != nil {
		return nil, err
	}
	if len(c.Tables) == 0 {
		return nil, fmt.Errorf("%s: %w", file, ErrNoTables)
	}
	return c, nil
}

// set stores key = v of table t (nil: the top of the file).
func (c *Config) set(t *Table, key string, line int, v *unstable.Node) error {
	text, err := valueText(v)
	if err != nil {
		return c.Errorf(line, key, "%s", err)
	}
	if strings.Contains(key, ".") {
		return c.Errorf(line, key, "dotted keys are not used here")
	}
	str := func() (string, error) {
		if v.Kind != unstable.String || text == "" {
			return "", c.Errorf(line, key, "want a non-empty string, got %s", kindName(v.Kind))
		}
		return text, nil
	}
	if t == nil {
		return c.setTop(key, line, v.Kind, text, str)
	}
	t.lines[key] = line
	switch {
	case key == "ring":
		t.Ring, err = str()
	case key == "name":
		t.Name, err = str()
	case key == "source" && t.Kind == Mirror:
		t.Source, err = str()
	case key == "dir" && t.Kind == Record:
		t.Dir, err = str()
	default:
		t.Keys = append(t.Keys, KeyValue{Key: key, Kind: valueKind(v.Kind), Text: text, Line: line})
	}
	return err
}

// setTop stores a process-wide key; str checks a string value.
func (c *Config) setTop(key string, line int, kind unstable.Kind, text string, str func() (string, error)) error {
	var err error
	switch key {
	case "metrics":
		c.Metrics, err = str()
	case "log-format":
		c.LogFormat, err = str()
	case "loop":
		c.loopLine = line
		if c.Loop, err = str(); err == nil && c.Loop != "none" {
			if _, perr := idle.ParseMode(c.Loop); perr != nil {
				err = c.Errorf(line, key, "%s, or none (a thread per ring and direction)", perr)
			}
		}
	case "loop-cpu":
		n, perr := strconv.Atoi(text)
		if kind != unstable.Integer || perr != nil || n < -1 {
			return c.Errorf(line, key, "want a CPU number or -1, got %s %s", kindName(kind), text)
		}
		c.LoopCPU, c.loopCPULine = n, line
	case "loops":
		n, perr := strconv.Atoi(text)
		if kind != unstable.Integer || perr != nil || n < 1 || n > MaxLoops {
			return c.Errorf(line, key, "want 1 to %d loops, got %s %s", MaxLoops, kindName(kind), text)
		}
		c.Loops, c.loopsLine = n, line
	default:
		return c.Errorf(line, key, "unknown key at the top of the file: want %s, or a [[serve]], [[mirror]] or [[record]] table", strings.Join(topKeys, " or "))
	}
	return err
}

// check checks what needs the whole file: every table has its ring (and
// source, or dir), names, rings and archive directories are not given
// twice, and loop-cpu and loops come with a loop (the default one, or
// the loop key's).
func (c *Config) check() error {
	names := map[string]int{}
	rings := map[string]int{}
	dirs := map[string]int{}
	for i := range c.Tables {
		t := &c.Tables[i]
		switch {
		case t.Ring == "":
			return t.Errorf(t.Line, "", "[[%s]] needs a ring key (the ring's path)", t.Kind)
		case t.Kind == Mirror && t.Source == "":
			return t.Errorf(t.Line, "", "[[mirror]] needs a source key (HOST:PORT of the serve)")
		case t.Kind == Record && t.Dir == "":
			return t.Errorf(t.Line, "", "[[record]] needs a dir key (the archive's directory)")
		}
		if t.Kind == Record {
			dir := filepath.Clean(t.Dir)
			if at, dup := dirs[dir]; dup {
				return t.Errorf(t.lines["dir"], "dir", "%s is another [[record]]'s archive already (line %d): one recorder writes an archive", t.Dir, at)
			}
			dirs[dir] = t.Line
		}
		if t.Name == "" {
			t.Name = filepath.Base(t.Ring)
		}
		ring := t.Kind + "\x00" + t.Ring
		if at, dup := rings[ring]; dup {
			return t.Errorf(t.lines["ring"], "ring", "%s is in a [[%s]] already (line %d)", t.Ring, t.Kind, at)
		}
		rings[ring] = t.Line
		if at, dup := names[t.Unit()]; dup {
			return t.Errorf(t.Line, "", "a second [[%s]] named %q (the first is on line %d): give one a name key", t.Kind, t.Name, at)
		}
		names[t.Unit()] = t.Line
	}
	c.applyDefaultLoop()
	if c.Loop == "" && c.loopCPULine > 0 {
		return c.Errorf(c.loopCPULine, "loop-cpu", "pins the loop, and there is none (loop = \"none\", or a table's own wait, spin or cpu key): set loop")
	}
	if c.Loop == "" && c.loopsLine > 0 {
		return c.Errorf(c.loopsLine, "loops", "counts loops, and there is none (loop = \"none\", or a table's own wait, spin or cpu key): set loop")
	}
	return nil
}

// valueText is a value as text: strings as they are, integers in
// decimal, floats and booleans as TOML wrote them.
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

// valueKind is the ValueKind of a value valueText took.
func valueKind(k unstable.Kind) ValueKind {
	switch k {
	case unstable.String:
		return String
	case unstable.Integer:
		return Integer
	case unstable.Float:
		return Float
	}
	return Bool
}

func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String, unstable.Integer, unstable.Float, unstable.Bool:
		return valueKind(k).String()
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
	return &ConfigError{File: file, Line: line, Msg: pe.Message}
}
