package idle

import "time"

// BusyYieldEvery is how long a yielding loop (Yield, Adaptive) keeps its
// CPU while every round finds work before it yields once. Without it, a
// loop with work holds its CPU for the scheduler's whole slice (EEVDF's
// default base slice, milliseconds long) while a loop sharing that CPU,
// whose own yields have pushed its deadline away, waits with a record in
// hand: its latency becomes the slice instead of the loop's turnaround.
// The period is short against a slice and long against a sched_yield that
// finds nobody waiting (a system call), so the yields cost a busy loop
// little of its time.
const BusyYieldEvery = 20 * time.Microsecond

// Hold is how long a loop has kept its CPU while it found work: an
// Idler's, or that of a loop that waits some other way (a server's sender
// waits on its ring). It is used by that loop's goroutine only.
type Hold struct {
	since  time.Time // first busy round since the loop last gave up its CPU (zero: it just did)
	yields uint64    // sched_yield calls made by Busy
}

// Busy records that a round found work, at now (the time the loop read
// for its round: Busy reads no clock), and yields once, reporting true,
// when the loop has found work for BusyYieldEvery since it last gave up
// its CPU.
func (h *Hold) Busy(now time.Time) bool {
	switch {
	case h.since.IsZero():
		h.since = now
	case now.Sub(h.since) >= BusyYieldEvery:
		h.yields++
		schedYield()
		h.since = time.Time{}
		return true
	}
	return false
}

// Gave records that the loop gives up its CPU now (it yields or sleeps),
// or spins on fruitless polls: the count starts again at its next Busy.
func (h *Hold) Gave() { h.since = time.Time{} }

// Yields returns the sched_yield calls Busy made.
func (h *Hold) Yields() uint64 { return h.yields }
