package bench

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Hiccups are what a thread of the bench that sleeps 1 ms at a time saw
// while a deployed measurement ran: how much later than asked each sleep
// ended. A sample of the round trip far above its p99.9 that comes with a
// hiccup as long is the machine's (the hypervisor stopped the VM, or no
// CPU was free to run a woken thread), not the endpoints'.
type Hiccups struct {
	Sleeps  int      `json:"sleeps"`
	Max     Duration `json:"max"`      // the longest oversleep
	Over1ms int      `json:"over_1ms"` // oversleeps above 1 ms
	Over5ms int      `json:"over_5ms"`
}

// hiccupSleep is one sleep of the hiccup meter.
const hiccupSleep = time.Millisecond

// hiccupMeter measures Hiccups on a locked thread from start to stop.
type hiccupMeter struct {
	// stop is stored true by end (the measuring goroutine), loaded by
	// the meter's thread after each sleep.
	stop atomic.Bool
	done chan Hiccups
}

// startHiccups starts a meter.
func startHiccups() *hiccupMeter {
	m := &hiccupMeter{done: make(chan Hiccups, 1)}
	go m.run()
	return m
}

func (m *hiccupMeter) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var h Hiccups
	ts := unix.NsecToTimespec(int64(hiccupSleep))
	for { // one sleep at least: a meter ended at once still timed one
		start := time.Now()
		// nanosleep itself, not a runtime timer: the kernel wakes this
		// thread, and no other of the process takes part.
		for req := ts; unix.Nanosleep(&req, &req) == unix.EINTR; {
		}
		h.add(time.Since(start) - hiccupSleep)
		if m.stop.Load() {
			break
		}
	}
	m.done <- h
}

// add counts one sleep, which ended over later than asked.
func (h *Hiccups) add(over time.Duration) {
	h.Sleeps++
	h.Max = max(h.Max, Duration(over))
	if over > time.Millisecond {
		h.Over1ms++
	}
	if over > 5*time.Millisecond {
		h.Over5ms++
	}
}

// end stops the meter and returns what it saw (within a sleep).
func (m *hiccupMeter) end() Hiccups {
	m.stop.Store(true)
	return <-m.done
}

// cell is the hiccups' column of the deployed tables: the longest
// oversleep, µs (a dash when the meter did not run).
func (h Hiccups) cell() string {
	if h.Sleeps == 0 {
		return dash
	}
	return fmtUS(float64(h.Max) / 1e3)
}
