package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/supervisor"
)

// The supervisor's events are logged as ringfire run always logged them.
func TestRunLogsUnitEvents(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	tab := &supervisor.Table{Kind: supervisor.Mirror, Name: "orders"}
	logUnitEvent(log, supervisor.Event{Kind: supervisor.UnitFailed, Table: tab, Err: errors.New("boom"), Backoff: 2 * time.Second})
	logUnitEvent(log, supervisor.Event{Kind: supervisor.UnitEnded, Table: tab})
	want := `level=ERROR msg="unit failed, restarting" unit=mirror ring=orders err=boom in=2s
level=INFO msg="unit ended" unit=mirror ring=orders
`
	if b.String() != want {
		t.Errorf("logged\n%s\nwant\n%s", b.String(), want)
	}
}
