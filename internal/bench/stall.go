package bench

import (
	"runtime"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// measureStall reads the clock on a locked thread for d.
func measureStall(d time.Duration) report.Stall {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := report.Stall{For: report.Duration(d)}
	start := time.Now()
	last := start
	for now := start; now.Sub(start) < d; now = time.Now() {
		gap := now.Sub(last)
		last = now
		st.Readings++
		st.Max = max(st.Max, report.Duration(gap))
		if gap > 20*time.Microsecond {
			st.Over20us++
		}
		if gap > time.Millisecond {
			st.Over1ms++
		}
		if gap > 5*time.Millisecond {
			st.Over5ms++
		}
	}
	return st
}
