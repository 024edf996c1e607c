package deployed

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/testenv"
)

const us = int64(time.Microsecond)

// at is the trace's time 10 s plus n µs, in ns.
func at(n int64) int64 { return 10*int64(time.Second) + n*us }

func readSchedFile(t *testing.T, tids map[int]int) *schedLog {
	t.Helper()
	f, err := os.Open("testdata/sched.trace")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := parseSched(f, tids)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestParseSched: a thread's running, runnable and sleeping times over a
// window come from its switches (preempted: runnable) and wake-ups;
// threads outside the set are not kept.
func TestParseSched(t *testing.T) {
	l := readSchedFile(t, map[int]int{100: 1, 101: 1, 200: 2})
	if _, kept := l.threads[300]; kept {
		t.Fatal("thread 300, not asked for, was kept")
	}
	run, wait, sleep, ok := l.spent(100, at(50), at(350))
	if !ok || run != 130*us || wait != 70*us || sleep != 100*us {
		t.Fatalf("thread 100 over 50..350 µs: run %d, runnable %d, asleep %d ns (covered %v); want 130, 70, 100 µs", run, wait, sleep, ok)
	}
	if _, _, _, ok := l.spent(100, at(-10), at(20)); ok {
		t.Fatal("a window before the thread's first event is covered")
	}
	if _, _, _, ok := l.spent(100, at(300), at(500)); ok {
		t.Fatal("a window past the trace's last event is covered")
	}
	if tid, ok := l.hotThread(1); !ok || tid != 100 {
		t.Fatalf("process 1's hot thread: %d, %v; want 100", tid, ok)
	}
	if l.last != at(400) || l.dropped {
		t.Fatalf("last event %d, dropped %v", l.last, l.dropped)
	}
}

// TestTails: of the samples slower than p99 of the round trip, each goes
// to the hop whose time exceeded its own median by the most, and the
// scheduler says how that hop's thread spent it.
func TestTails(t *testing.T) {
	chain := []traceStage{{"p", "push", "pinger push"}, {"a", "picked", "serve picked"}, {"p", "read", "pinger read"}}
	tr := &traceRun{chain: chain, pids: []int{2, 1, 2}}
	for i := range int64(100) {
		t0 := at(-1000 + i*5)
		tr.samples = append(tr.samples, []int64{t0, t0 + 10*us, t0 + 20*us})
	}
	tr.samples[99] = []int64{at(100), at(400), at(410)} // the hop to serve picked took 300 µs
	l := readSchedFile(t, map[int]int{100: 1, 101: 1, 200: 2})
	tails := tr.tails(l)
	if len(tails) != 1 {
		t.Fatalf("tails %+v, want one hop above p99", tails)
	}
	h := tails[0]
	if h.Above != "p99" || h.Tail != 1 || h.Samples != 1 || h.From != "pinger push" || h.To != "serve picked" || h.ExcessP50 != 290 {
		t.Fatalf("tail %+v", h)
	}
	// Thread 100 over 100..400 µs: runnable 50, running 50, asleep 100,
	// runnable 20, running 80.
	if h.Traced != 1 || h.Running != 130.0/300 || h.Runnable != 70.0/300 || h.Sleeping != 100.0/300 {
		t.Fatalf("tail %+v: want running 130, runnable 70, asleep 100 of 300 µs", h)
	}
	if none := tr.tails(nil); none[0].Traced != 0 || none[0].Running != 0 {
		t.Fatalf("without a trace: %+v", none[0])
	}
}

// TestSchedTrace: the kernel's trace of this process's threads sees a
// thread that runs and sleeps by turns (the sleeps are the workload
// traced, not a synchronisation).
func TestSchedTrace(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skipf(t, "the kernel's tracefs needs root")
	}
	ready, work, done := make(chan int), make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ready <- unix.Gettid() // a thread of the process before the trace lists them
		<-work
		for range 20 {
			for start := time.Now(); time.Since(start) < 200*time.Microsecond; {
			}
			ts := unix.NsecToTimespec(int64(100 * time.Microsecond))
			unix.Nanosleep(&ts, nil)
		}
		close(done)
	}()
	tid := <-ready
	st, err := startSched([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	close(work)
	<-done
	l, err := st.stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.threads[tid]) == 0 {
		t.Fatalf("no event of thread %d in the trace (%d threads recorded)", tid, len(l.threads))
	}
	run, _, sleep, ok := l.spent(tid, l.threads[tid][0].t, l.end())
	if !ok || run <= 0 || sleep <= 0 {
		t.Fatalf("thread %d: ran %d ns, slept %d ns (covered %v); want both", tid, run, sleep, ok)
	}
	if _, err := os.Stat(st.dir); !os.IsNotExist(err) {
		t.Fatalf("the trace instance %s is still there: %v", st.dir, err)
	}
}
