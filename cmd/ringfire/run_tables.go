package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/supervisor"
	"github.com/ringfire/ringfire/replica"
)

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

// setTableFlags applies t's keys to fs, the flag set of serve or mirror:
// an unknown key, a value of the wrong TOML type or one the flag refuses
// is an error naming its line.
func setTableFlags(t *supervisor.Table, fs *flag.FlagSet) error {
	for _, kv := range t.Keys {
		fl := fs.Lookup(kv.Key)
		if fl == nil {
			if why, ok := processWide[kv.Key]; ok {
				return t.Errorf(kv.Line, kv.Key, "%s", why)
			}
			return t.Errorf(kv.Line, kv.Key, "unknown key in [[%s]]: not a flag of ringfire %s (run 'ringfire %s --help')", t.Kind, t.Kind, t.Kind)
		}
		if want, ok := wantKind(fl, kv.Kind); !ok {
			return t.Errorf(kv.Line, kv.Key, "want %s, got %s", want, kv.Kind)
		}
		if err := fs.Set(kv.Key, kv.Text); err != nil {
			return t.Errorf(kv.Line, kv.Key, "%v", err)
		}
	}
	return nil
}

// wantKind checks a value's TOML type against the flag's: booleans for
// boolean flags, integers for integer flags, strings for strings and
// durations ("10s"); a flag of its own type takes a string or an integer.
func wantKind(fl *flag.Flag, k supervisor.ValueKind) (string, bool) {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return "a string or an integer", k == supervisor.String || k == supervisor.Integer
	}
	switch g.Get().(type) {
	case bool:
		return "a boolean", k == supervisor.Bool
	case int, int64, uint, uint64:
		return "an integer", k == supervisor.Integer
	case float64:
		return "a number", k == supervisor.Integer || k == supervisor.Float
	case time.Duration:
		return `a duration string such as "10s"`, k == supervisor.String
	}
	return "a string", k == supervisor.String
}

// flagName finds the flag a usage error begins with ("--udp 70000: ...").
var flagName = regexp.MustCompile(`^--([a-z0-9-]+)`)

// located gives an error from a unit's checks the line of t's key it
// names (else the table's header).
func located(t *supervisor.Table, err error) error {
	var ce *supervisor.ConfigError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	line, key := t.Line, ""
	if m := flagName.FindStringSubmatch(err.Error()); m != nil {
		for _, kv := range t.Keys {
			if kv.Key == m[1] {
				line, key = kv.Line, kv.Key
			}
		}
	}
	return t.Errorf(line, key, "%v", err)
}

// newTableFlags is a quiet flag set for a table's keys.
func newTableFlags(kind string) *flag.FlagSet {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// setLoopWait gives a table the loop's wait mode (checkLoopKeys refused a
// table's own): what depends on it (AF_XDP busy polling) follows the loop.
func setLoopWait(fs *flag.FlagSet, loop string) {
	if loop != "" {
		fs.Set("wait", loop)
	}
}

// serveUnitOf builds the unit of a [[serve]] table; loop, the file's loop
// key, is its wait mode ("": the table's own).
func serveUnitOf(t *supervisor.Table, log *slog.Logger, loop string) (*serveUnit, error) {
	fs := newTableFlags("serve")
	f := addServeFlags(fs)
	if err := setTableFlags(t, fs); err != nil {
		return nil, err
	}
	setLoopWait(fs, loop)
	u, err := f.unit(t.Ring, log)
	if err != nil {
		return nil, located(t, err)
	}
	u.name = t.Name
	return u, nil
}

// mirrorUnitOf builds the unit of a [[mirror]] table; loop is the file's
// loop key and l the unit's Loop (nil: the mirror's own thread).
func mirrorUnitOf(t *supervisor.Table, log *slog.Logger, published func(uint64), loop string, l *replica.Loop) (*mirrorUnit, error) {
	fs := newTableFlags("mirror")
	f := addMirrorFlags(fs)
	if err := setTableFlags(t, fs); err != nil {
		return nil, err
	}
	setLoopWait(fs, loop)
	f.loop = l
	u, err := f.unit(t.Source, t.Ring, log, published)
	if err != nil {
		if strings.HasPrefix(err.Error(), "SOURCE ") {
			return nil, t.Errorf(t.KeyLine("source"), "source", "%v", err)
		}
		return nil, located(t, err)
	}
	u.name = t.Name
	return u, nil
}

// recordUnitOf builds the unit of a [[record]] table: its ring and dir
// keys are record's RING and DIR.
func recordUnitOf(t *supervisor.Table, log *slog.Logger) (*recordUnit, error) {
	fs := newTableFlags("record")
	f := addRecordFlags(fs)
	if err := setTableFlags(t, fs); err != nil {
		return nil, err
	}
	u, err := f.unit(t.Ring, t.Dir, log)
	if err != nil {
		return nil, located(t, err)
	}
	u.name = t.Name
	return u, nil
}
