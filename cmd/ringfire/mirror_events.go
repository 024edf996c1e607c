package main

import (
	"log/slog"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// failureLogEvery is how often repeated failed attempts are logged.
const failureLogEvery = time.Minute

// mirrorEvents logs a mirror's events: connects and disconnects (with
// their reason), throttled (a source that drops every session at once
// gets one line a second of each, with the count suppressed), and failed
// attempts rate-limited by a failureLog: the first, then one line a
// minute with the count of failures since and the backoff in use.
func mirrorEvents(log *slog.Logger, now func() time.Time) func(replica.MirrorEvent) {
	fails := newFailureLog(failureLogEvery, now)
	return func(e replica.MirrorEvent) {
		switch e.Kind {
		case replica.MirrorConnected:
			fails.succeed()
			log.Info("connected to the source", throttled(""), "source", e.Source)
		case replica.MirrorDisconnected:
			if e.Err == nil {
				log.Info("disconnected from the source", "source", e.Source, "reason", "mirror closing")
				return
			}
			log.Warn("disconnected from the source", throttled(rootCause(e.Err)), "source", e.Source, "reason", e.Err)
		case replica.MirrorConnectFailed:
			if n, ok := fails.fail(); ok {
				log.Warn("cannot connect to the source", "source", e.Source, "err", e.Err,
					"failures", n, "backoff", e.Backoff)
			}
		case replica.MirrorLineDown:
			log.Warn("line down: nothing from it while the other line delivers", "source", e.Source, "line", e.Line, "after", replica.LineDark)
		case replica.MirrorLineUp:
			log.Info("line up: it delivers again", "source", e.Source, "line", e.Line)
		}
	}
}
