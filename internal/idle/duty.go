package idle

import "time"

// The hot phase of Adaptive. A loop that found work for at least
// 1/HotShare of the last DutyWindow is hot: records or datagrams keep
// arriving, and its next gap is likely as short as the last ones. A hot
// loop yields for HotYieldFor after its last work instead of YieldFor
// before it sleeps, so that it does not sleep between the bursts of a
// steady stream.
//
// Why: a sleep between bursts is paid when the next burst comes, by
// whoever wakes the loop, until the loop runs again. A server's sender
// sleeps on its ring's futex, and the producer makes a FUTEX_WAKE system
// call for every record it publishes while the sender is announced as
// waiting: from the wake-up until the woken thread gets a CPU, which on a
// busy host is most of a burst (measured: one producer system call for
// every 10 records at 2 M records/s in 1-ms bursts, 5,000 times more than
// with yield). The producer slows down, the sender does not run, and the
// loop falls behind by milliseconds where yield keeps up.
//
// The cost is bounded by the work: a loop yields at most HotYieldFor
// after each stretch of work, and only while its work fills at least
// 1/HotShare of its time, so the CPU it spends yielding is at most
// HotShare times the CPU its work takes, and an idle loop (no work for a
// DutyWindow) is cold again and sleeps after YieldFor, as before. When
// other threads want the CPU, each sched_yield hands it to them.
const (
	DutyWindow  = time.Millisecond
	HotShare    = 8
	HotYieldFor = 2 * time.Millisecond
)

// Duty measures the share of a loop's time spent on work, window by
// window (DutyWindow), from the times the loop reads for its rounds: Work
// when a round found work, Rest when it found none. It reads no clock and
// is used by that loop's goroutine only.
type Duty struct {
	start time.Time     // the current window's start (zero: none yet)
	from  time.Time     // the start of the work under way (zero: none)
	busy  time.Duration // work in the current window, the stretch under way excluded
	hot   bool          // the last complete window was hot
}

// Work records that a round at now found work: a stretch of work starts,
// or goes on.
func (d *Duty) Work(now time.Time) {
	d.roll(now)
	if d.from.IsZero() {
		d.from = now
	}
}

// Rest records that a round at now found nothing: the stretch of work
// under way, if any, ended at now.
func (d *Duty) Rest(now time.Time) {
	if !d.from.IsZero() {
		d.busy += now.Sub(d.from)
		d.from = time.Time{}
	}
	d.roll(now)
}

// roll closes the current window once it is DutyWindow long: hot when it
// held at least 1/HotShare of work.
func (d *Duty) roll(now time.Time) {
	if d.start.IsZero() {
		d.start = now
		return
	}
	span := now.Sub(d.start)
	if span < DutyWindow {
		return
	}
	busy := d.busy
	if !d.from.IsZero() { // the stretch under way counts up to now
		busy += now.Sub(d.from)
		d.from = now
	}
	d.hot = busy*HotShare >= span
	d.start, d.busy = now, 0
}

// Hot reports whether the last complete window was hot.
func (d *Duty) Hot() bool { return d.hot }
