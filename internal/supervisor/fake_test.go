package supervisor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakes builds fake units and records what the supervisor does with
// them: every Build, every Run (a run, sent on runs) and every Discard.
// A table with key fail-build fails to build.
type fakes struct {
	runs      chan *run
	events    chan Event
	mu        sync.Mutex
	built     []string
	discarded []string
	ready     map[string]*atomic.Bool // by unit: what its fakes' Ready says
	failNext  map[string]error        // by unit: the error of its next Build
}

func newFakes() *fakes {
	return &fakes{runs: make(chan *run, 64), events: make(chan Event, 64), ready: map[string]*atomic.Bool{}, failNext: map[string]error{}}
}

// supervisor is a Supervisor of f's units whose back-off is a
// nanosecond: a restart waits for the test's channels, not a timer.
func (f *fakes) supervisor() *Supervisor {
	return New(Options{Build: f.build, Events: func(e Event) { f.events <- e }, Backoff: time.Nanosecond, MaxBackoff: time.Nanosecond})
}

func (f *fakes) build(_ *Config, t *Table) (Unit, error) {
	for _, kv := range t.Keys {
		if kv.Key == "fail-build" {
			return nil, t.Errorf(kv.Line, kv.Key, "refused")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext[t.Unit()]; err != nil {
		delete(f.failNext, t.Unit())
		return nil, err
	}
	f.built = append(f.built, t.Unit())
	r := f.ready[t.Unit()]
	if r == nil {
		r = new(atomic.Bool)
		f.ready[t.Unit()] = r
	}
	return &fakeUnit{f: f, key: t.Unit(), ready: r}, nil
}

// takeBuilt returns the units built since the last call, and forgets them.
func (f *fakes) takeBuilt() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.built
	f.built = nil
	return b
}

func (f *fakes) discards() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.discarded)
}

// failBuild makes the next Build of the unit key fail with err.
func (f *fakes) failBuild(key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[key] = err
}

func (f *fakes) setReady(key string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready[key].Store(ok)
}

// fakeUnit's Run reports itself on fakes.runs and blocks until its
// context ends or the test tells it what to return.
type fakeUnit struct {
	f     *fakes
	key   string
	ready *atomic.Bool
}

// run is one call of fakeUnit.Run.
type run struct {
	key    string
	ctx    context.Context
	up     func()
	result chan error    // the test's: what Run returns
	ended  chan struct{} // closed once Run returned
}

func (u *fakeUnit) Run(ctx context.Context, up func()) error {
	r := &run{key: u.key, ctx: ctx, up: up, result: make(chan error, 1), ended: make(chan struct{})}
	defer close(r.ended)
	u.f.runs <- r
	select {
	case <-ctx.Done():
		return nil
	case err := <-r.result:
		return err
	}
}

func (u *fakeUnit) Ready() error {
	if !u.ready.Load() {
		return errors.New("not ready yet")
	}
	return nil
}

func (u *fakeUnit) Discard() {
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	u.f.discarded = append(u.f.discarded, u.key)
}

// waitTimeout bounds every wait of these tests: a failure, never a
// synchronisation.
const waitTimeout = 10 * time.Second

// nextRuns receives n Run calls, by unit.
func (f *fakes) nextRuns(t *testing.T, n int) map[string]*run {
	t.Helper()
	got := map[string]*run{}
	for range n {
		select {
		case r := <-f.runs:
			if got[r.key] != nil {
				t.Fatalf("%s ran twice", r.key)
			}
			got[r.key] = r
		case <-time.After(waitTimeout):
			t.Fatalf("%d of %d runs after %v: %v", len(got), n, waitTimeout, got)
		}
	}
	return got
}

func (f *fakes) nextEvent(t *testing.T) Event {
	t.Helper()
	select {
	case e := <-f.events:
		return e
	case <-time.After(waitTimeout):
		t.Fatalf("no event after %v", waitTimeout)
	}
	return Event{}
}

// ended reports whether r's Run has returned.
func ended(r *run) bool {
	select {
	case <-r.ended:
		return true
	default:
		return false
	}
}

func keysOf(m map[string]*run) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
