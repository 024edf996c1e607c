package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/ringfire/ringfire/replica"
)

// setFlags applies a table's keys to fs, the flag set of serve or mirror:
// an unknown key, a value of the wrong TOML type or one the flag refuses
// is an error naming its line.
func (t *tableSpec) setFlags(fs *flag.FlagSet) error {
	for _, kv := range t.keys {
		fl := fs.Lookup(kv.key)
		if fl == nil {
			if why, ok := processWide[kv.key]; ok {
				return t.errorf(kv.line, kv.key, "%s", why)
			}
			return t.errorf(kv.line, kv.key, "unknown key in [[%s]]: not a flag of ringfire %s (run 'ringfire %s --help')", t.kind, t.kind, t.kind)
		}
		if want, ok := wantKind(fl, kv.kind); !ok {
			return t.errorf(kv.line, kv.key, "want %s, got %s", want, kindName(kv.kind))
		}
		if err := fs.Set(kv.key, kv.text); err != nil {
			return t.errorf(kv.line, kv.key, "%v", err)
		}
	}
	return nil
}

// wantKind checks a value's TOML type against the flag's: booleans for
// boolean flags, integers for integer flags, strings for strings and
// durations ("10s"); a flag of its own type takes a string or an integer.
func wantKind(fl *flag.Flag, k unstable.Kind) (string, bool) {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return "a string or an integer", k == unstable.String || k == unstable.Integer
	}
	switch g.Get().(type) {
	case bool:
		return "a boolean", k == unstable.Bool
	case int, int64, uint, uint64:
		return "an integer", k == unstable.Integer
	case float64:
		return "a number", k == unstable.Integer || k == unstable.Float
	case time.Duration:
		return `a duration string such as "10s"`, k == unstable.String
	}
	return "a string", k == unstable.String
}

// flagName finds the flag a usage error begins with ("--udp 70000: ...").
var flagName = regexp.MustCompile(`^--([a-z0-9-]+)`)

// located gives an error from a unit's checks the line of the key it
// names (else the table's header).
func (t *tableSpec) located(err error) error {
	var ce *configError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	line, key := t.line, ""
	if m := flagName.FindStringSubmatch(err.Error()); m != nil {
		for _, kv := range t.keys {
			if kv.key == m[1] {
				line, key = kv.line, kv.key
			}
		}
	}
	return t.errorf(line, key, "%v", err)
}

// newTableFlags is a quiet flag set for a table's keys.
func newTableFlags(kind string) *flag.FlagSet {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// setLoopWait gives a table the loop's wait mode (checkLoop refused a
// table's own): what depends on it (AF_XDP busy polling) follows the loop.
func setLoopWait(fs *flag.FlagSet, loop string) {
	if loop != "" {
		fs.Set("wait", loop)
	}
}

// serveUnitOf builds the unit of a [[serve]] table; loop, the file's loop
// key, is its wait mode ("": the table's own).
func serveUnitOf(t *tableSpec, log *slog.Logger, loop string) (*serveUnit, error) {
	fs := newTableFlags("serve")
	f := addServeFlags(fs)
	if err := t.setFlags(fs); err != nil {
		return nil, err
	}
	setLoopWait(fs, loop)
	u, err := f.unit(t.ring, log)
	if err != nil {
		return nil, t.located(err)
	}
	u.name = t.name
	return u, nil
}

// mirrorUnitOf builds the unit of a [[mirror]] table; loop is the file's
// loop key and l the engine's Loop (nil: the mirror's own thread).
func mirrorUnitOf(t *tableSpec, log *slog.Logger, published func(uint64), loop string, l *replica.Loop) (*mirrorUnit, error) {
	fs := newTableFlags("mirror")
	f := addMirrorFlags(fs)
	if err := t.setFlags(fs); err != nil {
		return nil, err
	}
	setLoopWait(fs, loop)
	f.loop = l
	u, err := f.unit(t.source, t.ring, log, published)
	if err != nil {
		if strings.HasPrefix(err.Error(), "SOURCE ") {
			return nil, t.errorf(t.lines["source"], "source", "%v", err)
		}
		return nil, t.located(err)
	}
	u.name = t.name
	return u, nil
}
