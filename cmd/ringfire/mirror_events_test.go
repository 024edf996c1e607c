package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// TestMirrorEventsLog: connects and disconnects are logged each time,
// failed attempts once, then once a minute with the count since.
func TestMirrorEventsLog(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(1_000_000, 0)
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	on := mirrorEvents(log, func() time.Time { return clock })
	refused := errors.New("connection refused")
	fail := replica.MirrorEvent{Kind: replica.MirrorConnectFailed, Source: "src:1", Err: refused, Backoff: time.Second}
	for range 61 { // 0 s .. 60 s, one a second
		on(fail)
		clock = clock.Add(time.Second)
	}
	on(replica.MirrorEvent{Kind: replica.MirrorConnected, Source: "src:1"})
	on(replica.MirrorEvent{Kind: replica.MirrorDisconnected, Source: "src:1", Err: errors.New("peer closed")})
	on(fail)
	on(replica.MirrorEvent{Kind: replica.MirrorDisconnected, Source: "src:1"})
	want := []string{
		`level=WARN msg="cannot connect to the source" source=src:1 err="connection refused" failures=1 backoff=1s`,
		`level=WARN msg="cannot connect to the source" source=src:1 err="connection refused" failures=60 backoff=1s`,
		`level=INFO msg="connected to the source" source=src:1`,
		`level=WARN msg="disconnected from the source" source=src:1 reason="peer closed"`,
		`level=WARN msg="cannot connect to the source" source=src:1 err="connection refused" failures=1 backoff=1s`,
		`level=INFO msg="disconnected from the source" source=src:1 reason="mirror closing"`,
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
