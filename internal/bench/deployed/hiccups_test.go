package deployed

import (
	"testing"
	"time"
)

// A meter times whole sleeps: at least one however soon it ends, each
// at least the 1 ms asked (EINTR resumes the rest), so the wall time
// covers them all and no oversleep is negative.
func TestHiccupMeter(t *testing.T) {
	start := time.Now()
	h := startHiccups().end()
	wall := time.Since(start)
	if h.Sleeps < 1 || wall < time.Duration(h.Sleeps)*hiccupSleep || h.Max < 0 {
		t.Fatalf("hiccups %+v in %v: want at least one sleep of %v each, none early", h, wall, hiccupSleep)
	}
}
