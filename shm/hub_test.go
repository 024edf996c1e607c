package shm

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// threads is the number of OS threads of this process.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestParkWaitOneThread: 64 receives blocked with ParkWait hold no OS
// thread each (the process keeps a handful), one record wakes them all,
// and cancelling their context wakes the blocked ones.
func TestParkWaitOneThread(t *testing.T) {
	const n = 64
	ws := ParkWait(0).WithMaxSleep(5 * time.Second)
	p, path := newTickRing(t, ProducerOptions{Capacity: 64})
	cs := make([]*Consumer[tick], n)
	for i := range cs {
		cs[i] = consumer[tick](t, path, ReadOptions{Start: StartHead, Wait: &ws})
	}
	r := p.Writer().Ring()
	before := threads(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make([]error, n)
	got := make([]tick, n)
	var wg sync.WaitGroup
	recvAll := func() {
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.RecvContext(ctx, &got[i])
			}()
		}
	}
	recvAll()
	waitUntil(t, "all receives are parked", func() bool {
		h, _ := r.Header()
		return h.WaitingConsumers == n
	})
	if th := threads(t); th > before+8 {
		t.Errorf("%d receives parked: %d OS threads (were %d before)", n, th, before)
	}
	start := time.Now()
	pushTicks(t, p, 1, 1)
	wg.Wait()
	for i := range cs {
		if errs[i] != nil || got[i].Seq != 1 {
			t.Fatalf("receive %d: %+v, %v", i, got[i], errs[i])
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("one record woke the parked receives after %v: they slept out their bound", d)
	}
	recvAll()
	waitUntil(t, "all receives are parked again", func() bool {
		h, _ := r.Header()
		return h.WaitingConsumers == n
	})
	start = time.Now()
	cancel()
	wg.Wait()
	for i := range cs {
		if errs[i] != context.Canceled {
			t.Fatalf("cancelled receive %d: %v", i, errs[i])
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancel woke the parked receives after %v", d)
	}
}

func TestParkWaitCancelAndMux(t *testing.T) {
	ws := ParkWait(0).WithMaxSleep(5 * time.Second)
	ps, cs := tickRings(t, 3)
	for _, c := range cs {
		c.Reader().w.ws = ws
	}
	medianCancel(t, ps[0].Writer().Ring(), func(ctx context.Context) error {
		var v tick
		return cs[0].RecvContext(ctx, &v)
	})
	m := newMux(t, RoundRobin, &ws, cs...)
	done := make(chan Origin, 1)
	go func() {
		var v tick
		o, _ := m.Recv(context.Background(), &v)
		done <- o
	}()
	waitUntil(t, "the multiplexer is parked on all rings", func() bool {
		for _, p := range ps {
			if h, _ := p.Writer().Ring().Header(); h.WaitingConsumers != 1 {
				return false
			}
		}
		return true
	})
	pushTicks(t, ps[2], 1, 1)
	select {
	case o := <-done:
		if o.Index != 2 || o.Seq != 1 {
			t.Fatalf("multiplexer woke with %+v, want source 2 record 1", o)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a record in ring 2 did not wake the parked multiplexer")
	}
}

// TestParkWaitBeyondOneWaitv: receives parked on more rings than one
// futex_waitv takes are each woken by a record in their own ring. (Which
// words the hub leaves out of its sleep varies with map order, so this
// checks liveness, not that the left-out ones are polled within 50 µs.)
func TestParkWaitBeyondOneWaitv(t *testing.T) {
	const n = futexWaitvMax + 20
	ws := ParkWait(0).WithMaxSleep(5 * time.Second)
	ps := make([]*Producer[tick], n)
	dones := make([]chan error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range n {
		var path string
		ps[i], path = newTickRing(t, ProducerOptions{Capacity: 8})
		c := consumer[tick](t, path, ReadOptions{Start: StartHead, Wait: &ws})
		dones[i] = make(chan error, 1)
		go func() {
			var v tick
			dones[i] <- c.RecvContext(ctx, &v)
		}()
	}
	for i := range n {
		waitUntil(t, "every receive is parked", func() bool {
			h, _ := ps[i].Writer().Ring().Header()
			return h.WaitingConsumers == 1
		})
	}
	start := time.Now()
	for i := range n { // one ring at a time: only that receive can wake
		pushTicks(t, ps[i], 1, 1)
		if err := <-dones[i]; err != nil {
			t.Fatalf("receive %d of %d: %v", i, n, err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("%d wake-ups one ring at a time took %v: receives beyond one futex_waitv slept out the hub's bound", n, d)
	}
}
