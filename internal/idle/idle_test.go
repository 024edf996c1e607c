package idle

import (
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseMode(t *testing.T) {
	for i, n := range Modes() {
		m, err := ParseMode(n)
		if err != nil || m != Mode(i) || m.String() != n {
			t.Errorf("ParseMode(%q) = %v, %v", n, m, err)
		}
	}
	if _, err := ParseMode("nap"); !errors.Is(err, ErrMode) {
		t.Errorf("ParseMode(nap): %v, want ErrMode", err)
	}
	if Mode(9).String() != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", Mode(9).String())
	}
}

func newWaker(t *testing.T) *Waker {
	t.Helper()
	w, err := NewWaker()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// idleAsync runs one Round and Idle(max) of d on a goroutine and returns a
// channel closed when Idle returned.
func idleAsync(d *Idler, max time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Round()
		d.Idle(max)
	}()
	return done
}

// waitParked waits until the loop of w has parked (bounded).
func waitParked(t *testing.T, w *Waker) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.parked.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the loop never parked")
		}
		runtime.Gosched()
	}
}

func finished(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: Idle did not return", what)
	}
}

// A parked loop wakes when notified, long before its bound.
func TestNotifyWakesParked(t *testing.T) {
	w := newWaker(t)
	d := NewIdler(Strategy{Mode: Block}, w)
	done := idleAsync(d, time.Hour)
	waitParked(t, w)
	w.Notify()
	finished(t, done, "notify")
	if st := d.Stats(); st.Sleeps != 1 || st.Wakeups != 1 || st.Timeouts != 0 {
		t.Fatalf("stats %+v: want one sleep ended by the waker", st)
	}
	if w.writes.Load() != 1 {
		t.Fatalf("%d eventfd writes, want 1", w.writes.Load())
	}
}

// A notification between the round's start and the sleep keeps the loop
// from sleeping; a notification while it works costs no system call.
func TestNotifyBeforeSleep(t *testing.T) {
	w := newWaker(t)
	d := NewIdler(Strategy{Mode: Block}, w)
	d.Round()
	w.Notify()
	d.Idle(time.Hour)
	if st := d.Stats(); st.Sleeps != 0 || st.Skipped != 1 {
		t.Fatalf("stats %+v: want the sleep skipped", st)
	}
	if w.writes.Load() != 0 {
		t.Fatalf("%d eventfd writes while the loop worked, want 0", w.writes.Load())
	}
}

// A datagram on a descriptor ends the sleep.
func TestReadableEndsSleep(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	rc.Control(func(f uintptr) { fd = int(f) })
	w := newWaker(t)
	d := NewIdler(Strategy{Mode: Block}, w, fd)
	done := idleAsync(d, time.Hour)
	waitParked(t, w)
	s, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	finished(t, done, "datagram")
	if st := d.Stats(); st.Sleeps != 1 || st.Ready != 1 {
		t.Fatalf("stats %+v: want one sleep ended by the socket", st)
	}
}

// A sleep ends at its bound; a bound of zero never sleeps.
func TestSleepBound(t *testing.T) {
	d := NewIdler(Strategy{Mode: Block}, nil)
	d.Round()
	d.Idle(time.Millisecond)
	d.Idle(0)
	if st := d.Stats(); st.Sleeps != 1 || st.Timeouts != 1 || st.Spins != 1 {
		t.Fatalf("stats %+v: want one timed-out sleep and one spin", st)
	}
}

// Adaptive spins, then yields, then sleeps, by the time since the first
// fruitless round; work starts it over.
func TestAdaptivePhases(t *testing.T) {
	now := time.Unix(0, 0)
	d := NewIdler(Strategy{Mode: Adaptive, SpinFor: 10 * time.Microsecond, YieldFor: 100 * time.Microsecond}, nil)
	d.now = func() time.Time { return now }
	step := func(dt time.Duration) { now = now.Add(dt); d.Idle(time.Nanosecond) }
	step(0)                     // t=0: spin
	step(9 * time.Microsecond)  // 9 µs: spin
	step(2 * time.Microsecond)  // 11 µs: yield
	step(90 * time.Microsecond) // 101 µs: yield
	step(20 * time.Microsecond) // 121 µs: sleep
	if st := d.Stats(); st.Spins != 2 || st.Yields != 2 || st.Sleeps != 1 {
		t.Fatalf("stats %+v: want 2 spins, 2 yields, 1 sleep", st)
	}
	d.Busy(now)
	step(time.Hour)
	if st := d.Stats(); st.Spins != 3 {
		t.Fatalf("stats %+v: after work, the first fruitless round spins", st)
	}
}

// IdleAt times Adaptive's phases from the loop's own reading of the clock
// and reads none itself; Idle, and Yield's IdleAt, read it only when
// Adaptive needs it.
func TestIdleAtReadsNoClock(t *testing.T) {
	reads := 0
	d := NewIdler(Strategy{Mode: Adaptive, SpinFor: 10 * time.Microsecond, YieldFor: 100 * time.Microsecond}, nil)
	d.now = func() time.Time { reads++; return time.Unix(0, 0) }
	at := time.Unix(1, 0)
	d.IdleAt(at, time.Nanosecond)                           // the first fruitless round: spin
	d.IdleAt(at.Add(11*time.Microsecond), time.Nanosecond)  // yield
	d.IdleAt(at.Add(121*time.Microsecond), time.Nanosecond) // sleep
	if st := d.Stats(); reads != 0 || st.Spins != 1 || st.Yields != 1 || st.Sleeps != 1 {
		t.Fatalf("%d clock reads, stats %+v: want none, 1 spin, 1 yield, 1 sleep", reads, st)
	}
	d.Idle(time.Nanosecond)
	if reads != 1 {
		t.Fatalf("Idle of Adaptive read the clock %d times, want 1", reads)
	}
	y := NewIdler(Strategy{Mode: Yield}, nil)
	y.now = d.now
	y.Idle(0)
	if reads != 1 {
		t.Errorf("Idle of Yield read the clock")
	}
}

// Spin, Yield and Block never allocate.
func TestIdleAllocs(t *testing.T) {
	w := newWaker(t)
	for _, m := range []Mode{Spin, Yield, Block, Adaptive} {
		d := NewIdler(Strategy{Mode: m}, w)
		if a := testing.AllocsPerRun(100, func() { d.Round(); d.Idle(time.Microsecond); w.Notify() }); a != 0 {
			t.Errorf("%v: %v allocations per round", m, a)
		}
	}
}

func TestLockThread(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := range 1024 {
		if set.IsSet(i) {
			cpu = i
			break
		}
	}
	unlock, err := LockThread(cpu)
	if err != nil {
		t.Fatal(err)
	}
	var now unix.CPUSet
	unix.SchedGetaffinity(0, &now)
	if now.Count() != 1 || !now.IsSet(cpu) {
		t.Errorf("pinned to CPU %d, affinity has %d CPUs", cpu, now.Count())
	}
	unlock()
	if _, err := LockThread(100000); err == nil {
		t.Error("LockThread(100000) succeeded")
	}
}

// A hot loop's thread takes one more P for the rest of the program, and
// gives it back.
func TestLockThreadAddsProc(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	unlock, err := LockThread(-1)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Errorf("GOMAXPROCS %d while a loop runs, want %d", got, before+1)
	}
	unlock()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after, want %d", got, before)
	}
}

// A yielding loop whose rounds all find work yields once every
// BusyYieldEvery; a fruitless round (which gives the CPU up) starts the
// count again; a spinning or blocking loop never yields for work.
func TestBusyYield(t *testing.T) {
	for _, m := range []Mode{Spin, Yield, Adaptive, Block} {
		d := NewIdler(Strategy{Mode: m}, nil)
		now := time.Unix(0, 0)
		d.now = func() time.Time { return now } // Adaptive's phases in Idle
		step := BusyYieldEvery / 4
		for range 4 * 10 { // 10 × BusyYieldEvery of work
			d.Busy(now)
			now = now.Add(step)
		}
		want := uint64(0)
		if m == Yield || m == Adaptive {
			want = 8 // from the first busy round: every fifth one
		}
		if got := d.Stats().BusyYields; got != want {
			t.Errorf("%v: %d busy yields in 10 × BusyYieldEvery, want %d", m, got, want)
		}
		before := d.Stats().BusyYields
		for range 3 { // under BusyYieldEvery, each time, with a fruitless round between
			d.Busy(now)
			now = now.Add(3 * step)
			d.Busy(now)
			d.Idle(0)
		}
		if got := d.Stats().BusyYields - before; got != 0 {
			t.Errorf("%v: %d busy yields when fruitless rounds came every %v", m, got, 3*step)
		}
	}
}

// A Hold yields, and says so, once its loop has been busy for
// BusyYieldEvery; Gave starts the count again.
func TestHold(t *testing.T) {
	var h Hold
	now := time.Unix(0, 0)
	if h.Busy(now) || h.Busy(now.Add(BusyYieldEvery-1)) {
		t.Fatal("yielded before BusyYieldEvery of work")
	}
	if !h.Busy(now.Add(BusyYieldEvery)) {
		t.Fatal("no yield after BusyYieldEvery of work")
	}
	h.Busy(now)
	h.Gave()
	if h.Busy(now.Add(BusyYieldEvery)) || h.Yields() != 1 {
		t.Fatalf("yielded after Gave started the count again (%d yields)", h.Yields())
	}
}

// Work queued that no descriptor shows (OnPending) keeps the loop from
// sleeping when found before the sleep (the notify is on its way:
// Skipped), and a sleep that ran to its bound with work queued is counted
// as a lost wake-up (PendingSleeps) once a later sleep finds that no
// notify came within notifyGrace; one that came (queued as the sleep timed
// out, its notify under way, late on a loaded host) is not.
func TestPendingSleeps(t *testing.T) {
	w := newWaker(t)
	d := NewIdler(Strategy{Mode: Block}, w)
	now := time.Unix(0, 0)
	d.now = func() time.Time { return now }
	queued := true
	d.OnPending(func() bool { return queued })
	d.Round()
	d.Idle(time.Hour)
	if st := d.Stats(); st.Skipped != 1 || st.Sleeps != 0 || st.PendingSleeps != 0 {
		t.Fatalf("stats %+v: want the sleep skipped for queued work", st)
	}
	calls := 0
	d.OnPending(func() bool { calls++; return calls == 2 }) // queued during the sleep, nobody notified
	d.Round()
	d.Idle(time.Millisecond)
	now = now.Add(notifyGrace - 1)
	d.Round()
	d.Idle(time.Millisecond)
	if st := d.Stats(); st.Sleeps != 2 || st.PendingSleeps != 0 {
		t.Fatalf("stats %+v: judged before notifyGrace passed", st)
	}
	now = now.Add(1)
	d.Round()
	d.Idle(time.Millisecond)
	if st := d.Stats(); st.Sleeps != 3 || st.Timeouts != 3 || st.PendingSleeps != 1 {
		t.Fatalf("stats %+v: want one timed-out sleep counted as pending", st)
	}
	calls = 0
	d.Round()
	d.Idle(time.Millisecond) // queued as it timed out...
	now = now.Add(notifyGrace - 1)
	w.Notify() // ...its notify late, within notifyGrace
	d.Round()
	d.Idle(time.Millisecond)
	now = now.Add(notifyGrace)
	d.Round()
	d.Idle(time.Millisecond)
	if st := d.Stats(); st.PendingSleeps != 1 {
		t.Fatalf("stats %+v: a sleep whose work was notified after it counted as pending", st)
	}
	d.OnPending(func() bool { return false })
	d.Round()
	d.Idle(time.Millisecond)
	d.Round()
	d.Idle(time.Millisecond)
	if st := d.Stats(); st.PendingSleeps != 1 {
		t.Fatalf("stats %+v: a sleep with nothing queued counted as pending", st)
	}
}
