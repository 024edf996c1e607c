package shm

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"golang.org/x/sys/unix"
)

// waitUntil polls cond until it holds, failing tb after 5 s.
func waitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testenv.Until(tb, 5*time.Second, what, cond)
}

// sleepy is a futex strategy whose sleeps last up to 5 s: a receive that
// returns sooner was woken, not timed out.
func sleepy() *WaitStrategy {
	ws := FutexWait(0).WithMaxSleep(5 * time.Second)
	return &ws
}

func tickRings(tb testing.TB, n int) ([]*Producer[tick], []*Consumer[tick]) {
	tb.Helper()
	ps := make([]*Producer[tick], n)
	cs := make([]*Consumer[tick], n)
	for i := range n {
		ps[i], _ = newTickRing(tb, ProducerOptions{Capacity: 1024})
		cs[i] = consumer[tick](tb, ps[i].Writer().Ring().Path(), ReadOptions{Start: StartHead, Wait: sleepy()})
	}
	return ps, cs
}

func newMux(tb testing.TB, policy MuxPolicy, ws *WaitStrategy, cs ...*Consumer[tick]) *RingMultiplexer[tick] {
	tb.Helper()
	m := NewRingMultiplexer[tick](policy, ws)
	for i, c := range cs {
		if n, err := m.Add(c); err != nil || n != i {
			tb.Fatalf("Add source %d = %d, %v", i, n, err)
		}
	}
	return m
}

func TestMuxRoundRobinFair(t *testing.T) {
	ps, cs := tickRings(t, 3)
	m := newMux(t, RoundRobin, nil, cs...)
	for _, p := range ps {
		pushTicks(t, p, 1, 300)
	}
	var share [3]int
	var v tick
	for range 600 {
		o, ok := m.TryRecv(&v)
		if !ok {
			t.Fatal("multiplexer empty with 900 records queued")
		}
		if v.Seq != o.Seq {
			t.Fatalf("record %d reported as %+v", v.Seq, o)
		}
		share[o.Index]++
	}
	for i, n := range share {
		if n < 180 || n > 220 {
			t.Errorf("source %d got %d of 600 (shares %v), want 200 ± 10%%", i, n, share)
		}
	}
}

func TestMuxStrictPriority(t *testing.T) {
	ps, cs := tickRings(t, 2)
	m := newMux(t, Priority, nil, cs...)
	pushTicks(t, ps[1], 1, 50)
	pushTicks(t, ps[0], 1, 50)
	var got []int
	var v tick
	for {
		o, ok := m.TryRecv(&v)
		if !ok {
			break
		}
		got = append(got, o.Index)
		if len(got) == 25 {
			pushTicks(t, ps[0], 51, 60) // arrives while source 1 waits: served first
		}
	}
	want := slices.Concat(slices.Repeat([]int{0}, 60), slices.Repeat([]int{1}, 50))
	if !slices.Equal(got, want) {
		t.Fatalf("order of sources %v, want 60 × 0 then 50 × 1", got)
	}
}

// TestMuxSleepsOnAllRings: a blocked receive announces itself in every
// ring's waiting_consumers (it sleeps on all futex words at once) and a
// record in any ring wakes it long before its 5 s sleep bound.
func TestMuxSleepsOnAllRings(t *testing.T) {
	ps, cs := tickRings(t, 3)
	m := newMux(t, RoundRobin, sleepy(), cs...)
	for _, target := range []int{2, 0, 1} {
		type res struct {
			o   Origin
			v   tick
			err error
		}
		done := make(chan res, 1)
		go func() {
			var v tick
			o, err := m.Recv(context.Background(), &v)
			done <- res{o, v, err}
		}()
		waitUntil(t, "the receive sleeps on all three rings", func() bool {
			for _, p := range ps {
				if h, _ := p.Writer().Ring().Header(); h.WaitingConsumers != 1 {
					return false
				}
			}
			return true
		})
		start := time.Now()
		seq := ps[target].Writer().Next()
		pushTicks(t, ps[target], seq, seq)
		r := <-done
		if r.err != nil || r.o.Index != target || r.v.Seq != seq {
			t.Fatalf("woke with %+v, %+v, %v; want source %d record %d", r.o, r.v, r.err, target, seq)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a record in ring %d woke the receive after %v: it slept out its bound", target, d)
		}
	}
}

// cancelLatency blocks recv in a futex sleep (5 s bound), cancels its
// context once ring shows the sleeper, and returns how long the receive
// took to return after the cancel.
func cancelLatency(t *testing.T, r *Ring, recv func(ctx context.Context) error) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv(ctx) }()
	waitUntil(t, "the receive sleeps", func() bool {
		h, _ := r.Header()
		return h.WaitingConsumers > 0
	})
	start := time.Now()
	cancel()
	err := <-done
	d := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled receive returned %v", err)
	}
	if d > time.Second {
		t.Fatalf("cancelled receive returned after %v: not woken by the cancel", d)
	}
	return d
}

// medianCancel runs cancelLatency 15 times and checks the median is
// within the 10 ms (one slow scheduling does not fail it).
func medianCancel(t *testing.T, r *Ring, recv func(ctx context.Context) error) {
	t.Helper()
	var ds []time.Duration
	for range 15 {
		ds = append(ds, cancelLatency(t, r, recv))
	}
	slices.Sort(ds)
	t.Logf("cancel to return: min %v, median %v, max %v", ds[0], ds[len(ds)/2], ds[len(ds)-1])
	if ds[len(ds)/2] > 10*time.Millisecond {
		t.Fatalf("median cancel latency %v, want within 10 ms", ds[len(ds)/2])
	}
}

func TestRecvContextCancelWakesSleeper(t *testing.T) {
	ps, cs := tickRings(t, 1)
	r := ps[0].Writer().Ring()
	t.Run("consumer", func(t *testing.T) {
		medianCancel(t, r, func(ctx context.Context) error {
			var v tick
			return cs[0].RecvContext(ctx, &v)
		})
	})
	t.Run("multiplexer", func(t *testing.T) {
		m := newMux(t, RoundRobin, sleepy(), cs[0])
		medianCancel(t, r, func(ctx context.Context) error {
			var v tick
			_, err := m.Recv(ctx, &v)
			return err
		})
	})
	t.Run("no futex_waitv", func(t *testing.T) {
		noWaitv.Store(true)
		defer noWaitv.Store(false)
		medianCancel(t, r, func(ctx context.Context) error {
			var v tick
			return cs[0].RecvContext(ctx, &v)
		})
	})
}

func TestQueueRecvCancel(t *testing.T) {
	path := ringPath(t)
	p := mpmcProducer(t, path, 16)
	q := queueConsumer(t, path, QueueOptions{Wait: sleepy()})
	medianCancel(t, p.Writer().Ring(), func(ctx context.Context) error {
		var v tick
		return q.Recv(ctx, &v)
	})
}

func TestAllIterators(t *testing.T) {
	ps, cs := tickRings(t, 2)
	pushTicks(t, ps[0], 1, 5)
	var got []uint64
	for seq, v := range cs[0].All(context.Background()) {
		if seq != v.Seq {
			t.Fatalf("record %d yielded as %d", v.Seq, seq)
		}
		got = append(got, seq)
		if len(got) == 5 {
			break
		}
	}
	if !slices.Equal(got, seqs(1, 5)) {
		t.Fatalf("All yielded %v", got)
	}
	// A cancelled context ends a blocked iteration.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitUntil(t, "the iteration sleeps", func() bool {
			h, _ := ps[1].Writer().Ring().Header()
			return h.WaitingConsumers > 0
		})
		cancel()
	}()
	for seq := range cs[1].All(ctx) {
		t.Fatalf("idle ring yielded %d", seq)
	}

	m := newMux(t, RoundRobin, nil, cs...)
	pushTicks(t, ps[0], 6, 7)
	pushTicks(t, ps[1], 1, 2)
	var origins []Origin
	for o := range m.All(context.Background()) {
		if origins = append(origins, o); len(origins) == 4 {
			break
		}
	}
	want := []Origin{{0, 6}, {1, 1}, {0, 7}, {1, 2}}
	if !slices.Equal(origins, want) {
		t.Fatalf("multiplexer All yielded %v, want %v", origins, want)
	}

	path := ringPath(t)
	mp := mpmcProducer(t, path, 16)
	q := queueConsumer(t, path, QueueOptions{})
	for i := range 3 {
		v := tick{Value: uint64(i)}
		mp.Push(&v)
	}
	var qs []uint64
	for seq, v := range q.All(context.Background()) {
		if v.Value != seq-1 {
			t.Fatalf("ticket %d holds value %d", seq, v.Value)
		}
		if qs = append(qs, seq); len(qs) == 3 {
			break
		}
	}
	if !slices.Equal(qs, seqs(1, 3)) {
		t.Fatalf("queue All yielded %v", qs)
	}
}

// TestHotPathsAllocateNothing: pushing and receiving a record that is
// there, blocking or not, allocates nothing.
func TestHotPathsAllocateNothing(t *testing.T) {
	ps, cs := tickRings(t, 2)
	m := newMux(t, RoundRobin, nil, cs...)
	path := ringPath(t)
	mp := mpmcProducer(t, path, 1024)
	q := queueConsumer(t, path, QueueOptions{})
	ctx := context.Background()
	var v tick
	for name, f := range map[string]func(){
		"Consumer.RecvContext": func() { ps[0].Push(&v); cs[0].RecvContext(ctx, &v) },
		"RingMultiplexer.Recv": func() { ps[1].Push(&v); m.Recv(ctx, &v) },
		"MpmcProducer.Push+MpmcQueueConsumer.Recv": func() {
			if _, err := mp.Push(&v); err != nil {
				t.Fatal(err)
			}
			if err := q.Recv(ctx, &v); err != nil {
				t.Fatal(err)
			}
		},
	} {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocations per record", name, n)
		}
	}
}

// threadCPU is the calling thread's user + system CPU time so far (lock
// the goroutine to its thread around the measurement): the process's
// would count the runtime's and other tests' threads too, which under
// the VM tests' emulation came to more than the receiver's own.
func threadCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBlockedReceiveDoesNotSpin: a receive blocked with FutexWait for
// 300 ms on an idle ring (or several) uses a small fraction of its
// thread's CPU: it sleeps in the kernel instead of polling.
func TestBlockedReceiveDoesNotSpin(t *testing.T) {
	ws := FutexWait(16)
	_, cs := tickRings(t, 3)
	for i := range cs {
		cs[i].Reader().w.ws = ws
	}
	path := ringPath(t)
	mpmcProducer(t, path, 16)
	q := queueConsumer(t, path, QueueOptions{Wait: &ws})
	m := newMux(t, RoundRobin, &ws, cs...)
	const block = 300 * time.Millisecond
	for name, recv := range map[string]func(ctx context.Context) error{
		"consumer":       func(ctx context.Context) error { var v tick; return cs[0].RecvContext(ctx, &v) },
		"queue consumer": func(ctx context.Context) error { var v tick; return q.Recv(ctx, &v) },
		"multiplexer":    func(ctx context.Context) error { var v tick; _, err := m.Recv(ctx, &v); return err },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), block)
		runtime.LockOSThread() // the receive runs, polls or sleeps on this thread
		before, start := threadCPU(t), time.Now()
		err := recv(ctx)
		used, wall := threadCPU(t)-before, time.Since(start)
		runtime.UnlockOSThread()
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: %v, want the deadline", name, err)
		}
		t.Logf("%s: blocked %v, used %v of CPU", name, wall.Round(time.Millisecond), used)
		if used > wall/4 {
			t.Errorf("%s: blocked %v and used %v of CPU: it polls instead of sleeping", name, wall, used)
		}
	}
}
