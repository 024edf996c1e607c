package main

import (
	"testing"
	"time"
)

// TestFailureLog drives the limiter with a fake clock: the first failure
// logs, the next minute's are counted into one line, a success starts
// over.
func TestFailureLog(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	f := newFailureLog(time.Minute, func() time.Time { return clock })
	step := func(d time.Duration, wantN int, wantLog bool) {
		t.Helper()
		clock = clock.Add(d)
		if n, ok := f.fail(); n != wantN || ok != wantLog {
			t.Fatalf("fail at +%v: (%d, %v), want (%d, %v)", d, n, ok, wantN, wantLog)
		}
	}
	step(0, 1, true) // the first failure
	for range 59 {   // one a second: counted, not logged
		step(time.Second, 0, false)
	}
	step(time.Second, 60, true) // a minute after the first line: the 59 + this one
	step(30*time.Second, 0, false)
	step(29*time.Second, 0, false)
	step(time.Second, 3, true)
	f.succeed()
	step(time.Second, 1, true) // after a success the first failure logs at once
	step(time.Second, 0, false)
	f.succeed()
	f.succeed()
	step(0, 1, true)
}
