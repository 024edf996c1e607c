package idle

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Stats count what an Idler did (read them from the loop's goroutine, or
// after it ended).
type Stats struct {
	Spins    uint64 // fruitless polls answered by polling again
	Yields   uint64 // sched_yield calls
	Sleeps   uint64 // ppoll calls
	Wakeups  uint64 // sleeps ended by the Waker
	Ready    uint64 // sleeps ended by a descriptor
	Timeouts uint64 // sleeps that ran to their bound
	Skipped  uint64 // sleeps not begun: notified since the round began
	// BusyYields counts the sched_yield calls of a loop that had found
	// work for BusyYieldEvery without giving up its CPU (Yield, Adaptive).
	BusyYields uint64
	// HotYields counts the yields of Adaptive past YieldFor because the
	// loop was hot (Duty): without them, it would have slept.
	HotYields uint64
	// PendingSleeps counts the sleeps that ran to their bound with work
	// queued that no descriptor shows (OnPending: a TCP frame the
	// mirror's reader queued): the loop slept with work pending because
	// whoever queued it did not wake it. It should stay zero.
	PendingSleeps uint64
}

// Idler is one loop's waiting state. It is used by that loop's goroutine
// only.
type Idler struct {
	s     Strategy
	w     *Waker
	fds   []unix.PollFd // the loop's descriptors, then the waker's eventfd
	gen   uint64        // w.gen at the last Round
	since time.Time     // first fruitless poll since work (zero: working)
	hold  Hold          // how long the loop has held its CPU with work
	duty  Duty          // Adaptive: the loop's share of work, for its hot phase
	now   func() time.Time
	st    Stats
	// onSleep, when set (OnSleep), is called before each ppoll.
	onSleep func(max time.Duration)
	// pending, when set (OnPending), reports work no descriptor shows.
	pending func() bool
	// suspect: a sleep ran to its bound at suspectAt with work pending,
	// when the Waker's count was suspectGen. Judged at the next sleeps: a
	// notify since (the queueing goroutine's, under way as the sleep
	// timed out) clears it; none within notifyGrace is a lost wake-up.
	suspect    bool
	suspectGen uint64
	suspectAt  time.Time
}

// notifyGrace is how long after a sleep that ran to its bound with work
// pending the queueing goroutine's notify may still come: between its
// queueing and its notify, a goroutine of a loaded host can wait for a
// CPU for milliseconds (TestDefaultWaitLoaded counted such a delay, with
// -race, on a host running other tests). A notify later than that, or
// never, is a lost wake-up.
const notifyGrace = 50 * time.Millisecond

// OnPending sets f to be called, on the loop's goroutine, just before
// each sleep and after one that ran to its bound: it reports whether the
// loop's sources hold work that no descriptor of the loop shows (queued
// by another goroutine, which notifies the Waker after queueing). Work
// found before a sleep skips it (counted in Skipped: the notify is on
// its way); work found after a whole sleep, whose notify has still not
// come by the next sleep, was a lost wake-up (PendingSleeps).
func (d *Idler) OnPending(f func() bool) { d.pending = f }

// OnSleep sets f to be called, on the loop's goroutine, each time Idle is
// about to sleep, with the sleep's bound: a loop with work that no
// descriptor shows (a ring's futex) arms its own watchers there, which
// then wake it through the Waker.
func (d *Idler) OnSleep(f func(max time.Duration)) { d.onSleep = f }

// NewIdler makes the waiting state of a loop that polls fds (readable
// means work) and is notified through w (nil: only fds and timeouts end a
// sleep).
func NewIdler(s Strategy, w *Waker, fds ...int) *Idler {
	d := &Idler{s: s, w: w, now: time.Now}
	d.Watch(fds...)
	return d
}

// Watch replaces the descriptors the loop sleeps on (a new connection's
// sockets); the Waker stays.
func (d *Idler) Watch(fds ...int) {
	d.fds = d.fds[:0]
	for _, fd := range fds {
		d.fds = append(d.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	if d.w != nil {
		d.fds = append(d.fds, unix.PollFd{Fd: int32(d.w.fd), Events: unix.POLLIN})
	}
}

// Round marks the start of a polling round: notifications from now on
// keep the next Idle from sleeping.
func (d *Idler) Round() {
	if d.w != nil {
		d.gen = d.w.gen.Load()
	}
}

// Busy records that the round found work, at now (the time the loop read
// for its round: Busy reads no clock): the next fruitless round starts
// Adaptive's phases afresh. A yielding loop (Yield, Adaptive) that has
// found work for BusyYieldEvery since it last gave up its CPU yields once.
func (d *Idler) Busy(now time.Time) {
	d.since = time.Time{}
	if d.s.Mode.Yields() {
		d.hold.Busy(now)
	}
	if d.s.Mode == Adaptive {
		d.duty.Work(now)
	}
}

// Stats returns the counts so far.
func (d *Idler) Stats() Stats {
	st := d.st
	st.BusyYields = d.hold.Yields()
	return st
}

// Idle waits once after a fruitless round, as the strategy says, never
// longer than max (a sleep ends at max; max <= 0 never sleeps).
func (d *Idler) Idle(max time.Duration) { d.IdleAt(time.Time{}, max) }

// IdleAt is Idle for a loop that read the clock for its round at now:
// Adaptive's phase is then timed from now instead of a clock read of its
// own (zero: Idle's, which reads the clock only for Adaptive).
func (d *Idler) IdleAt(now time.Time, max time.Duration) {
	d.hold.Gave() // it gives up its CPU now, or spins on fruitless polls
	switch d.phase(now) {
	case Spin:
		d.st.Spins++
	case Yield:
		d.st.Yields++
		schedYield()
	case hotYield:
		d.st.Yields++
		d.st.HotYields++
		schedYield()
	default:
		d.sleep(max)
	}
}

// hotYield is Adaptive's phase past YieldFor in a hot loop (Duty): a
// yield that a cold loop would have slept instead of.
const hotYield Mode = 255

// phase is what this fruitless round does: the mode itself, or Adaptive's
// phase by the time since the first fruitless round: a hot loop (Duty)
// yields for HotYieldFor, not YieldFor.
func (d *Idler) phase(now time.Time) Mode {
	if d.s.Mode != Adaptive {
		return d.s.Mode
	}
	if now.IsZero() {
		now = d.now()
	}
	d.duty.Rest(now)
	if d.since.IsZero() {
		d.since = now
	}
	switch idle := now.Sub(d.since) - d.s.spinFor(); {
	case idle < 0:
		return Spin
	case idle < d.s.yieldFor():
		return Yield
	case idle < HotYieldFor && d.duty.Hot():
		return hotYield
	}
	return Block
}

// sleep parks in ppoll on the descriptors and the waker for at most max.
func (d *Idler) sleep(max time.Duration) {
	if max <= 0 {
		d.st.Spins++
		return
	}
	if d.onSleep != nil {
		d.onSleep(max)
	}
	d.judge()
	if d.pending != nil && d.pending() { // queued, its Waker notify under way
		d.st.Skipped++
		return
	}
	if d.w != nil {
		d.w.parked.Store(1)
		if d.w.gen.Load() != d.gen {
			d.w.parked.Store(0)
			d.st.Skipped++
			return
		}
	}
	d.st.Sleeps++
	for i := range d.fds {
		d.fds[i].Revents = 0
	}
	ts := unix.NsecToTimespec(max.Nanoseconds())
	n, err := unix.Ppoll(d.fds, &ts, nil)
	if d.w != nil {
		d.w.parked.Store(0)
	}
	switch {
	case d.w != nil && d.fds[len(d.fds)-1].Revents != 0:
		d.w.drain()
		d.st.Wakeups++
	case err == nil && n > 0:
		d.st.Ready++
	default: // EINTR counts as a timeout: the loop polls again
		d.st.Timeouts++
		if d.pending != nil && d.pending() { // queued as the sleep timed out, or before
			if d.w == nil {
				d.st.PendingSleeps++
			} else {
				d.suspect, d.suspectGen, d.suspectAt = true, d.w.gen.Load(), d.now()
			}
		}
	}
}

// judge counts a suspect sleep whose work was never notified: it lay
// there the whole sleep, and nobody woke the loop for it within
// notifyGrace.
func (d *Idler) judge() {
	switch {
	case !d.suspect:
	case d.w.gen.Load() != d.suspectGen:
		d.suspect = false
	case d.now().Sub(d.suspectAt) >= notifyGrace:
		d.suspect = false
		d.st.PendingSleeps++
	}
}

// schedYield gives the thread's CPU to any other runnable thread. A raw
// system call: it never blocks, so the runtime need not hand the P away.
func schedYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// procs serializes the GOMAXPROCS changes of LockThread.
var procs sync.Mutex

// addProcs changes GOMAXPROCS by delta.
func addProcs(delta int) {
	procs.Lock()
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + delta)
	procs.Unlock()
}

// LockThread locks the calling goroutine to its OS thread for a hot loop
// and, when cpu >= 0, binds that thread to CPU cpu. A hot loop keeps its P
// (the runtime's right to run Go code) while it spins, yields or sleeps in
// a system call the runtime does not see through (ppoll, futex), so
// LockThread raises GOMAXPROCS by one for as long as the loop runs: the
// rest of the program (a TCP reader, the sessions) keeps as many Ps as it
// had, and the kernel shares the CPUs among the threads. The returned
// function undoes all of it.
func LockThread(cpu int) (unlock func(), err error) {
	runtime.LockOSThread()
	if cpu < 0 {
		addProcs(1)
		return func() { addProcs(-1); runtime.UnlockOSThread() }, nil
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("idle: pin to CPU %d: %w", cpu, os.NewSyscallError("sched_getaffinity", err))
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("idle: pin to CPU %d: %w", cpu, os.NewSyscallError("sched_setaffinity", err))
	}
	addProcs(1)
	return func() {
		addProcs(-1)
		unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}, nil
}
