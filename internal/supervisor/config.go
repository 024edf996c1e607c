package supervisor

import (
	"errors"
	"fmt"
	"strings"
)

// Config is a ringfire run file: process-wide keys at the top, then one
// [[serve]] table per served ring, one [[mirror]] table per mirror and
// one [[record]] table per archive a ring is recorded into.
type Config struct {
	File      string
	Metrics   string // top-level key metrics ("": none)
	LogFormat string // top-level key log-format ("": the caller's default)
	// Loop (key loop, a wait mode) runs every serve and mirror on a
	// shared polling loop, pinned to LoopCPU (key loop-cpu; -1: not
	// pinned). "" is a thread per ring and direction: key loop = "none",
	// or no loop key and a table with a key of OwnWaitKeys. Without
	// either, it is DefaultLoop.
	Loop    string
	LoopCPU int
	// Loops (key loops, default 1) is how many loops share the units;
	// loop i is pinned to LoopCPU + i.
	Loops  int
	Tables []Table

	loopLine, loopCPULine, loopsLine int // the lines of loop, loop-cpu and loops (0: absent)
}

// DefaultLoop is the wait mode of the loop a file without a loop key
// runs its serves and mirrors on. One loop per process is the layout
// that scales: it polls every ring in turn on one thread, where a thread
// per ring and direction outnumbers the cores (the bench's deployed and
// rings sections measure both). Adaptive idles at about no CPU.
const DefaultLoop = "adaptive"

// OwnWaitKeys are the table keys that give a serve or a mirror a wait
// mode and CPU of its own thread: a file whose tables use them, and has
// no loop key, runs a thread per ring and direction, as it always did.
var OwnWaitKeys = map[string]bool{"wait": true, "spin": true, "cpu": true}

// applyDefaultLoop sets Loop where the file leaves it to the default.
func (c *Config) applyDefaultLoop() {
	if c.Loop == "none" {
		c.Loop = ""
		return
	}
	if c.loopLine > 0 {
		return
	}
	for i := range c.Tables {
		for _, kv := range c.Tables[i].Keys {
			if OwnWaitKeys[kv.Key] {
				return
			}
		}
	}
	c.Loop = DefaultLoop
}

// Kinds of table: the header names them, [[serve]], [[mirror]] and
// [[record]].
const (
	Serve  = "serve"
	Mirror = "mirror"
	Record = "record"
)

// Table is one [[serve]], [[mirror]] or [[record]] table.
type Table struct {
	Kind   string // Serve, Mirror or Record
	File   string
	Line   int    // of its [[header]]
	Name   string // key name, else the ring's base name
	Ring   string // key ring, the ring's path
	Source string // key source of a mirror, the serve's address
	Dir    string // key dir of a record, the archive's directory
	// Keys are the other keys, in the file's order: the caller gives them
	// their meaning (ringfire run: the long flags of serve, mirror and
	// record).
	Keys  []KeyValue
	lines map[string]int // of ring, source and name
}

// KeyValue is one key of a table other than ring, source and name, with
// its value as text: strings as they are, integers in decimal, floats and
// booleans as TOML wrote them.
type KeyValue struct {
	Key  string
	Kind ValueKind
	Text string
	Line int
}

// ValueKind is the TOML type of a KeyValue.
type ValueKind uint8

// The kinds a KeyValue has: the parser refuses arrays, inline tables,
// dates and times.
const (
	String ValueKind = iota + 1
	Integer
	Float
	Bool
)

// String is the kind with its article, as an error names it ("an integer").
func (k ValueKind) String() string {
	switch k {
	case String:
		return "a string"
	case Integer:
		return "an integer"
	case Float:
		return "a float"
	case Bool:
		return "a boolean"
	}
	return fmt.Sprintf("kind %d", k)
}

// Unit names the unit a table describes, across reloads: its kind and
// name ("serve quotes"). Two tables of one file never share it.
func (t *Table) Unit() string { return t.Kind + " " + t.Name }

// Fingerprint changes when anything in the table does: Diff restarts a
// unit whose table's fingerprint changed, and only it.
func (t *Table) Fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%s", t.Kind, t.Name, t.Ring, t.Source, t.Dir)
	for _, kv := range t.Keys {
		fmt.Fprintf(&b, "\x00%s=%d:%s", kv.Key, kv.Kind, kv.Text)
	}
	return b.String()
}

// KeyLine is the line of key ring, source, dir or name (0: not in the table).
func (t *Table) KeyLine(key string) int { return t.lines[key] }

// Errorf is a *ConfigError in t's file at line, about key ("": none).
func (t *Table) Errorf(line int, key, format string, args ...any) error {
	return &ConfigError{File: t.File, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Errorf is a *ConfigError in c's file at line, about key ("": none).
func (c *Config) Errorf(line int, key, format string, args ...any) error {
	return &ConfigError{File: c.File, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// ConfigError is a mistake in the file: it names the file, the line and,
// when there is one, the key.
type ConfigError struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: key %q: %s", e.File, e.Line, e.Key, e.Msg)
}

// ErrNoTables is returned by Parse for a file with nothing to run.
var ErrNoTables = errors.New("the file has no [[serve]], [[mirror]] or [[record]] table")
