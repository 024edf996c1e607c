package report

import "time"

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

// Add counts one sleep, which ended over later than asked.
func (h *Hiccups) Add(over time.Duration) {
	h.Sleeps++
	h.Max = max(h.Max, Duration(over))
	if over > time.Millisecond {
		h.Over1ms++
	}
	if over > 5*time.Millisecond {
		h.Over5ms++
	}
}

// cell is the hiccups' column of the deployed tables: the longest
// oversleep, µs (a dash when the meter did not run).
func (h Hiccups) cell() string {
	if h.Sleeps == 0 {
		return dash
	}
	return fmtUS(float64(h.Max) / 1e3)
}
