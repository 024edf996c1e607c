package idle

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// startRelay runs a Relay whose fire stores what *src holds into seen and
// signals fired; it is closed when the test ends.
func startRelay(t *testing.T, src *atomic.Uint64) (r *Relay, seen *atomic.Uint64, fired chan struct{}, stop func()) {
	t.Helper()
	seen = new(atomic.Uint64)
	fired = make(chan struct{}, 1)
	r, err := NewRelay(func() {
		seen.Store(src.Load())
		select {
		case fired <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(func() { stop(); r.Close() })
	return r, seen, fired, stop
}

// parkedWithin waits (bounded) until Run is parked on its eventfd.
func parkedWithin(t *testing.T, r *Relay) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); r.parked.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("relay never parked")
		}
		runtime.Gosched()
	}
}

// A Kick that finds Run parked writes the eventfd and Run fires; one
// before Run parks costs no system call and still fires.
func TestRelayKickWakesParked(t *testing.T) {
	var src atomic.Uint64
	r, seen, fired, _ := startRelay(t, &src)
	parkedWithin(t, r)
	src.Store(1)
	r.Kick()
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("a Kick to a parked relay did not fire")
	}
	if seen.Load() != 1 {
		t.Fatalf("fire saw %d, want 1", seen.Load())
	}
	// Run announces itself parked before it takes pending and reads the
	// eventfd: a Kick in between is taken with pending (one fire) and
	// still writes the eventfd, which Run then reads (a second fire, with
	// nothing new: harmless). parkedWithin cannot tell the two apart.
	if st := r.Stats(); st.Writes != 1 || st.Fires < 1 || st.Fires > 2 {
		t.Fatalf("stats %+v, want 1 write and 1 fire (2 when the Kick came as Run parked)", st)
	}
}

// Kicks never get lost: after every Kick a fire follows that sees what
// was stored before it, whether Run was parked or firing at the time.
func TestRelayLosesNoKick(t *testing.T) {
	var src atomic.Uint64
	r, seen, _, _ := startRelay(t, &src)
	const kicks = 20_000
	for i := uint64(1); i <= kicks; i++ {
		src.Store(i)
		r.Kick()
		if i%1000 == 0 { // now and then, wait for the fire to catch up
			waitSeen(t, seen, i)
		}
	}
	waitSeen(t, seen, kicks)
	if st := r.Stats(); st.Fires == 0 || st.Fires > kicks || st.Writes > kicks {
		t.Fatalf("stats %+v after %d kicks", st, kicks)
	}
}

func waitSeen(t *testing.T, seen *atomic.Uint64, want uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); seen.Load() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("fire saw %d, want %d: a Kick was lost", seen.Load(), want)
		}
		runtime.Gosched()
	}
}

// Run ends with its context and after Close; Kicks after Close do
// nothing.
func TestRelayEnds(t *testing.T) {
	var src atomic.Uint64
	r, _, _, stop := startRelay(t, &src)
	parkedWithin(t, r)
	stop() // returns once Run did: the context ended it

	r2, err := NewRelay(func() {})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r2.Run(context.Background()) }()
	parkedWithin(t, r2)
	r2.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end after Close")
	}
	r2.Kick()
	if st := r2.Stats(); st.Writes != 0 {
		t.Fatalf("a Kick after Close wrote: %+v", st)
	}
}

// A Kick allocates nothing, parked or not.
func TestRelayKickAllocs(t *testing.T) {
	var src atomic.Uint64
	r, _, _, _ := startRelay(t, &src)
	if n := testing.AllocsPerRun(1000, r.Kick); n != 0 {
		t.Fatalf("Kick allocates %v times", n)
	}
}
