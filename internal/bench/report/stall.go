package report

import (
	"fmt"
	"time"
)

// Stall is what one thread reading the clock in a loop saw before the
// run, with nothing else of the run going: the gaps between two readings
// are times it did not run. On a VM they are the hypervisor's (steal
// time), and no latency of the run can be lower than they allow: the
// longest bounds the largest sample, and the gaps over 20 µs (300–600 a
// second on a 2-core VM: the "stalls" line of docs/benchmarks.md) fall
// inside some of a round trip's samples, which the tail then shows.
type Stall struct {
	For      Duration `json:"for"`
	Max      Duration `json:"max"`
	Over20us int      `json:"over_20us"`
	Over1ms  int      `json:"over_1ms"`
	Over5ms  int      `json:"over_5ms"`
	Readings int      `json:"readings"`
}

func (s Stall) String() string {
	d := time.Duration(s.For)
	return fmt.Sprintf("longest %v; %d gaps over 20 µs (%.0f/s), %d over 1 ms, %d over 5 ms in %v (a lone thread reading the clock)",
		time.Duration(s.Max).Round(time.Microsecond), s.Over20us, float64(s.Over20us)/d.Seconds(), s.Over1ms, s.Over5ms, d)
}
