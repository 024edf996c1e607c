package deployed

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"golang.org/x/sys/unix"
)

// hiccupSleep is one sleep of the hiccup meter.
const hiccupSleep = time.Millisecond

// hiccupMeter measures Hiccups on a locked thread from start to stop.
type hiccupMeter struct {
	// stop is stored true by end (the measuring goroutine), loaded by
	// the meter's thread after each sleep.
	stop atomic.Bool
	done chan report.Hiccups
}

// startHiccups starts a meter.
func startHiccups() *hiccupMeter {
	m := &hiccupMeter{done: make(chan report.Hiccups, 1)}
	go m.run()
	return m
}

func (m *hiccupMeter) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var h report.Hiccups
	ts := unix.NsecToTimespec(int64(hiccupSleep))
	for { // one sleep at least: a meter ended at once still timed one
		start := time.Now()
		// nanosleep itself, not a runtime timer: the kernel wakes this
		// thread, and no other of the process takes part.
		for req := ts; unix.Nanosleep(&req, &req) == unix.EINTR; {
		}
		h.Add(time.Since(start) - hiccupSleep)
		if m.stop.Load() {
			break
		}
	}
	m.done <- h
}

// end stops the meter and returns what it saw (within a sleep).
func (m *hiccupMeter) end() report.Hiccups {
	m.stop.Store(true)
	return <-m.done
}
