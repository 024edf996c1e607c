package shm

import (
	"runtime"
	"time"
)

// WaitStrategy says how a blocking receive waits for the next record.
type WaitStrategy struct {
	kind     waitKind
	spins    int           // polls before yielding or sleeping
	yields   int           // futex: sched_yield polls after the spins, before sleeping
	maxSleep time.Duration // bound of one futex sleep
}

type waitKind uint8

const (
	waitSpin waitKind = iota
	waitYield
	waitFutex
	waitOSYield
	waitPark
)

// sleeps reports whether the strategy sleeps on the futex word (and so
// needs a writable header to announce itself).
func (s WaitStrategy) sleeps() bool { return s.kind == waitFutex || s.kind == waitPark }

// DefaultMaxSleep bounds one futex sleep, so a lost wake-up costs at most
// this much latency.
const DefaultMaxSleep = 10 * time.Millisecond

// BusySpin polls continuously, burning a core while idle; lowest latency.
func BusySpin() WaitStrategy { return WaitStrategy{kind: waitSpin} }

// SpinYield polls spins times, then yields the processor between polls
// to other goroutines (runtime.Gosched): cheap, but the OS thread keeps
// its CPU, so a producer in another process that shares the CPU waits for
// the scheduler's time slice.
func SpinYield(spins int) WaitStrategy { return WaitStrategy{kind: waitYield, spins: spins} }

// SpinSchedYield polls spins times, then calls the sched_yield system
// call between polls: the thread gives its CPU to any other runnable
// thread, of this process or another. It keeps latency low when busy
// threads outnumber cores (a producer and its readers on one CPU), at the
// price of a system call per poll while idle.
func SpinSchedYield(spins int) WaitStrategy { return WaitStrategy{kind: waitOSYield, spins: spins} }

// FutexWait polls spins times, then sleeps on the header's futex word until
// the producer publishes (each sleep bounded by DefaultMaxSleep). The
// producer only makes the wake system call when a reader is waiting.
func FutexWait(spins int) WaitStrategy {
	return WaitStrategy{kind: waitFutex, spins: spins, maxSleep: DefaultMaxSleep}
}

// Adaptive polls spins times, then yields the CPU (sched_yield) between
// the next yields polls, then sleeps on the futex word as FutexWait does:
// a record that comes soon is seen at spinning speed, one that comes a
// little later at a yield's, and an idle reader costs nothing.
func Adaptive(spins, yields int) WaitStrategy {
	return WaitStrategy{kind: waitFutex, spins: spins, yields: yields, maxSleep: DefaultMaxSleep}
}

// WithMaxSleep returns the strategy with each futex sleep bounded by d
// instead of DefaultMaxSleep (a lost wake-up then costs up to d).
func (s WaitStrategy) WithMaxSleep(d time.Duration) WaitStrategy {
	s.maxSleep = d
	return s
}

// ParkWait polls spins times, then parks the receiving goroutine: one
// goroutine of the process (the park hub) sleeps in futex_waitv on the
// futex words of every parked receive and wakes those whose rings were
// published to. Any number of blocked receives then hold a single OS
// thread between them, at the price of a goroutine hand-off per
// wake-up; context cancellation and deadlines are plain Go selects. Each
// park is bounded by DefaultMaxSleep. Without futex_waitv it is FutexWait.
func ParkWait(spins int) WaitStrategy {
	return WaitStrategy{kind: waitPark, spins: spins, maxSleep: DefaultMaxSleep}
}

// pause waits once, round i of a wait for sequence want on ring r, never
// longer than until deadline (zero: no deadline).
func (s WaitStrategy) pause(r *Ring, want uint64, i int, deadline time.Time) {
	if i < s.spins || s.kind == waitSpin {
		return
	}
	switch s.kind {
	case waitYield:
		runtime.Gosched()
		return
	case waitOSYield:
		schedYield()
		return
	}
	if i < s.spins+s.yields {
		schedYield()
		return
	}
	d := s.maxSleep
	if d <= 0 {
		d = DefaultMaxSleep
	}
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
		if d <= 0 {
			return
		}
	}
	if r.hdr == nil { // cannot announce itself: the producer would not wake it
		time.Sleep(min(d, 50*time.Microsecond))
		return
	}
	// Load the futex word before announcing ourselves and re-checking: a
	// publish after this load changes the word, so FUTEX_WAIT returns at once.
	fw := r.futex.Load()
	r.waiting.Add(1)
	if r.writeSeq.Load() < want {
		r.hdr.futexWait(offFutex, fw, d)
	}
	r.waiting.Add(^uint32(0))
}

// Await waits with strategy ws until write_seq reaches seq, at most timeout
// (negative: no limit), and reports whether it did. Replica senders use it
// to wait for new records on a ring they only read.
func (r *Ring) Await(seq uint64, ws WaitStrategy, timeout time.Duration) bool {
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	for i := 0; ; i++ {
		if r.closed {
			return false
		}
		if r.writeSeq.Load() >= seq {
			return true
		}
		if i&15 == 15 && !deadline.IsZero() && !time.Now().Before(deadline) {
			return false
		}
		ws.pause(r, seq, i, deadline)
	}
}
