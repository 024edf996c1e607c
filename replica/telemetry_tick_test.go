package replica

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// TestNoLagWarningDuringCatchUp: a mirror that has just connected and
// reports Applied 0 while its catch-up runs is behind by design: no
// EventLagging until its session is live, and then the lag counts.
func TestNoLagWarningDuringCatchUp(t *testing.T) {
	now := time.Now()
	tele := newTelemetry(1024, 1000, now, DefaultMirrorRows)
	ss := &session{tcp: nil}
	ss.mode.Store(modeCatchUp)
	r := &mirrorRow{ss: ss, info: MirrorInfo{Connected: true, Telemetry: true, Since: now}}
	ss.row = r
	tele.rows = append(tele.rows, r)
	tele.status(ss, wire.Status{Applied: 0, Interval: 100 * time.Millisecond, ID: 1}, 1000, now)
	if ev := tele.tick(1000, now.Add(10*time.Millisecond), time.Minute); len(ev) != 0 {
		t.Fatalf("lag events during the catch-up: %+v", ev)
	}
	ss.mode.Store(modeLive)
	ev := tele.tick(1000, now.Add(20*time.Millisecond), time.Minute)
	if len(ev) != 1 || ev[0].Kind != EventLagging {
		t.Fatalf("a live mirror 1000 records behind a 1024-record ring: events %+v", ev)
	}
}
