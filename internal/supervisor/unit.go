package supervisor

import (
	"context"
	"time"
)

// Unit is one thing a Supervisor runs: ringfire run's units serve a ring
// or mirror one. The caller builds units (Options.Build); the supervisor
// only runs, restarts and stops them.
type Unit interface {
	// Run runs the unit until ctx ends (then it returns nil or ctx's
	// error), until it fails (an error: the supervisor builds the unit
	// again and runs that after a back-off) or until it ends by itself
	// (nil while ctx lives: it is not restarted). It releases what the
	// unit holds before it returns. It calls up whenever the unit works
	// again (a server listens): that clears the mark of an earlier
	// failure, which Healthy reports until then.
	Run(ctx context.Context, up func()) error
	// Ready is nil once the unit does its job (a server listens, a mirror
	// has connected once), else why not ("not listening yet"). It is
	// called while Run runs, from other goroutines.
	Ready() error
	// Discard releases a unit that will never run: Apply built it, then
	// refused the file because another table failed to build.
	Discard()
}

// BuildFunc builds the unit of t, a table of c. A mistake in the table
// is its error (best a *ConfigError naming the line: Table.Errorf). It is
// called by Apply, and again by a unit's goroutine each time the unit
// restarts after a failure (what it opens may have gone), so it must be
// safe for concurrent use.
type BuildFunc func(c *Config, t *Table) (Unit, error)

// EventKind says what happened to a unit.
type EventKind uint8

const (
	// UnitFailed: Run (or the Build before it) returned an error; the
	// unit is built again and restarted after Event.Backoff.
	UnitFailed EventKind = iota + 1
	// UnitEnded: Run returned nil before its context ended (a mirror that
	// runs once, whose source left); the unit is not restarted.
	UnitEnded
)

// Event is what a Supervisor reports of a unit, on that unit's goroutine:
// the caller logs it (a library does not).
type Event struct {
	Kind    EventKind
	Table   *Table        // the unit's table
	Err     error         // UnitFailed: why
	Backoff time.Duration // UnitFailed: the wait before the restart
}
