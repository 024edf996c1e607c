// Package supervisor runs the units of a ringfire run file: it parses the
// file, works out what a reread file changes, and starts, restarts and
// stops units accordingly. It knows nothing of what a unit does: the
// caller builds each unit from its table (Options.Build) and gives the
// table's keys their meaning (cmd/ringfire: the flags of serve, mirror
// and record). It never logs: it returns errors and counts, and reports
// failures through Options.Events, for the caller to log.
//
// Files:
//
//	config.go      Config, Table, KeyValue, ConfigError: a parsed file
//	parse.go       Parse: TOML (go-toml's parser) into tables, every error at file:line
//	diff.go        Diff, Plan, Change: old file, new file → start, restart, stop, keep
//	unit.go        Unit, BuildFunc, Event: what the caller supplies and hears
//	supervisor.go  Supervisor: Apply, Wait, and each unit's restart loop
//	health.go      Healthy, Ready, Snapshot, Stats: what /healthz, /readyz and metrics read
//	settle.go      Settle: read a file only once it has stopped changing
//
// A reload, as cmd/ringfire drives it:
//
//	SIGHUP ─▶ caller: Settle.Read (wait until the file has not changed
//	        for Quiet) ─▶ read the file ─▶ Parse ─▶ (its own checks) ─▶ Apply
//	Apply:  Diff(applied, new) ─▶ Build each unit to start or restart,
//	        in the file's order (an error: Discard those built, keep the
//	        running set, return it) ─▶ stop removed and changed units
//	        (cancel, wait for done) ─▶ start added and changed ones
//	unit goroutine:  Run ─▶ error? mark failed ─▶ Event ─▶ back-off
//	                 (idle.Sleep, doubling to MaxBackoff) ─▶ Build ─▶ Run …
//	                 nil before ctx ended ─▶ Event UnitEnded, not restarted
//
// Goroutines, and who wakes whom:
//
//   - The caller's goroutine calls Apply (at start and on each reload;
//     calls are serialised) and Wait. Apply parks on a stopped unit's done
//     channel; the unit's goroutine closes it as it returns. Settle.Read,
//     before a reload, runs there too and parks in a timer (idle.Sleep)
//     until the file has settled or the caller's context ends.
//   - One goroutine per unit (supervise) calls Unit.Run and parks in it;
//     Apply's cancel, or the end of the caller's context, wakes it (Run
//     must return once its context ends). Between runs it parks in the
//     back-off timer, which the same cancel cuts short. It calls Build
//     again, Options.Events and, through the up callback Run is given,
//     clears the unit's failure mark: all on that goroutine.
//   - Whatever Unit.Run starts is the unit's own, and ends before Run
//     returns.
//   - Readers (the caller's HTTP handlers) call Healthy, Ready, Snapshot
//     and Stats from any goroutine: they read under the Supervisor's
//     mutex and wake nobody; Ready calls Unit.Ready outside it.
//
// Wait returns once every unit goroutine has returned, which happens only
// after the context given to Apply has ended.
package supervisor
