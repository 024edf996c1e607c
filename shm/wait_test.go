package shm

import (
	"errors"
	"testing"
	"time"
)

func TestRecvWithEachStrategy(t *testing.T) {
	for name, ws := range map[string]WaitStrategy{
		"spin": BusySpin(), "yield": SpinYield(16), "sched-yield": SpinSchedYield(16), "adaptive": Adaptive(16, 16), "futex": FutexWait(0), "futex-spin": FutexWait(64),
	} {
		t.Run(name, func(t *testing.T) {
			p, path := newTickRing(t, ProducerOptions{Capacity: 64})
			c := consumer[tick](t, path, ReadOptions{Start: StartHead, Wait: &ws})
			done := make(chan struct{})
			defer func() { <-done }()
			go func() {
				defer close(done)
				for i := uint64(1); i <= 200; i++ {
					if i%50 == 0 {
						time.Sleep(2 * time.Millisecond) // let the reader go to sleep
					}
					v := tick{Seq: i, Value: 3 * i}
					p.Push(&v)
				}
			}()
			var v tick
			for i := uint64(1); i <= 200; i++ {
				if err := c.Recv(&v, 5*time.Second); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if v.Seq != i && c.Lapped() == 0 {
					t.Fatalf("got %d want %d", v.Seq, i)
				}
				i = v.Seq
			}
		})
	}
}

func TestRecvTimeout(t *testing.T) {
	_, path := newTickRing(t, ProducerOptions{Capacity: 8})
	for _, ws := range []WaitStrategy{BusySpin(), SpinYield(4), SpinSchedYield(4), Adaptive(4, 4), FutexWait(4)} {
		c := consumer[tick](t, path, ReadOptions{Wait: &ws})
		var v tick
		if err := c.Recv(&v, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
			t.Fatalf("%+v: %v", ws, err)
		}
	}
}

// waitForSleeper waits (5 s at most) until a reader of r has announced in
// waiting_consumers that it sleeps on the futex, and fails with msg if none
// has.
func waitForSleeper(t *testing.T, r *Ring, msg string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.waiting.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	if r.waiting.Load() == 0 {
		t.Fatal(msg)
	}
}

// The producer makes the wake system call only when someone waits: the
// futex word moves when a reader sleeps, and stays put when none does.
func TestFutexWakesOnlyWhenWaiting(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 64})
	r := p.Writer().Ring()
	pushTicks(t, p, 1, 10)
	if r.futex.Load() != 0 || r.waiting.Load() != 0 {
		t.Fatalf("futex %d waiting %d with no sleeper", r.futex.Load(), r.waiting.Load())
	}
	ws := FutexWait(0)
	c := consumer[tick](t, path, ReadOptions{Start: StartHead, Wait: &ws})
	got := make(chan error, 1)
	go func() {
		var v tick
		got <- c.Recv(&v, 10*time.Second)
	}()
	waitForSleeper(t, r, "reader never announced it was waiting")
	pushTicks(t, p, 11, 11)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if r.futex.Load() == 0 {
		t.Fatal("producer did not bump the futex word for a sleeper")
	}
	if w := r.waiting.Load(); w != 0 {
		t.Fatalf("waiting_consumers left at %d", w)
	}
}

// A ring opened read-only with Notify sleeps on the futex and is woken by
// the producer; Await reports records and timeouts.
func TestAwaitReadOnlyNotify(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 64})
	r := openRing(t, path, OpenOptions{Notify: true})
	if r.hdr == nil || r.hdr == r.m || r.m.writable {
		t.Fatal("Notify did not map the header writable beside a read-only ring")
	}
	if r.Await(1, FutexWait(0), 10*time.Millisecond) {
		t.Fatal("Await succeeded on an empty ring")
	}
	done := make(chan bool, 1)
	go func() { done <- r.Await(1, FutexWait(0), 10*time.Second) }()
	waitForSleeper(t, r, "the read-only waiter never announced itself")
	pushTicks(t, p, 1, 1)
	if !<-done {
		t.Fatal("Await missed the record")
	}
	if p.Writer().Ring().futex.Load() == 0 {
		t.Fatal("producer did not wake the read-only waiter")
	}
}

// Adaptive yields its yields polls before it sleeps on the futex: a
// reader inside its yield phase never announces a sleep, and one past it
// does (and is woken by a push).
func TestAdaptiveYieldsBeforeSleeping(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 64})
	r := p.Writer().Ring()
	long := Adaptive(0, 1<<30)
	c := consumer[tick](t, path, ReadOptions{Start: StartHead, Wait: &long})
	got := make(chan error, 1)
	go func() {
		var v tick
		got <- c.Recv(&v, 30*time.Millisecond)
	}()
	for done := false; !done; {
		select {
		case err := <-got:
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("a receive in its yield phase on an empty ring: %v, want ErrTimeout", err)
			}
			done = true
		default:
			if r.waiting.Load() != 0 {
				t.Fatal("a reader in Adaptive's yield phase announced a futex sleep")
			}
		}
	}
	short := Adaptive(0, 8)
	c2 := consumer[tick](t, path, ReadOptions{Start: StartHead, Wait: &short})
	go func() {
		var v tick
		got <- c2.Recv(&v, 10*time.Second)
	}()
	waitForSleeper(t, r, "a reader past Adaptive's 8 yields never slept on the futex")
	pushTicks(t, p, 1, 1)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
