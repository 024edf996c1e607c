package trace

import (
	"time"

	"golang.org/x/sys/unix"
)

// startClock reads time.Now and CLOCK_MONOTONIC back to back.
func startClock() (time.Time, int64) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Now(), ts.Nano()
}
