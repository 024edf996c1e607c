package supervisor

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
)

// Options configure a Supervisor.
type Options struct {
	Build BuildFunc // required
	// Events, when set, is told of every unit that fails or ends, on the
	// unit's goroutine; it must not call Apply or Wait.
	Events func(Event)
	// Backoff is the first wait before a failed unit restarts (0: 1 s);
	// it doubles after each failure in a row, up to MaxBackoff (0: 30 s).
	Backoff, MaxBackoff time.Duration
}

// Supervisor runs the units of a Config, each on its own goroutine, and
// applies a new Config by Diff: units added start, units removed stop,
// changed units restart alone, the others run on untouched. See the
// package comment for its goroutines.
type Supervisor struct {
	opt Options

	applyMu sync.Mutex // serialises Apply
	cur     *Config    // the file applied last (nil: none); under applyMu

	mu       sync.Mutex
	units    map[string]*unitState // by Table.Unit: the units of cur
	failures int                   // failures of every unit so far

	wg sync.WaitGroup // the units' goroutines
}

// unitState is a started unit: its table, the goroutine running it and
// what Healthy, Ready and Snapshot report of it.
type unitState struct {
	table  *Table
	conf   *Config // the file it was started from: Build's argument on restarts
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutine has returned

	// Under Supervisor.mu:
	unit     Unit  // in Run now (nil: between two runs, or ended)
	err      error // the failure it restarts from (nil: none, or up since)
	failures int
}

// New is a Supervisor that runs nothing yet.
func New(opt Options) *Supervisor {
	if opt.Backoff <= 0 {
		opt.Backoff = time.Second
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = 30 * time.Second
	}
	return &Supervisor{opt: opt, units: map[string]*unitState{}}
}

// Apply makes the running units those of c, as Diff of the file applied
// last and c says. Every unit it starts or restarts is built first, in
// the file's order: a table that fails to build is the error, and then
// nothing stops or starts (the running set is kept). Started units run
// until ctx ends or a later Apply stops them. Apply keeps c, which the
// caller must not change afterwards.
func (s *Supervisor) Apply(ctx context.Context, c *Config) (Change, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	p := Diff(s.cur, c)
	todo := slices.Concat(p.Start, p.Restart)
	slices.SortFunc(todo, func(a, b *Table) int { return a.Line - b.Line })
	built := make([]Unit, 0, len(todo))
	for _, t := range todo {
		u, err := s.opt.Build(c, t)
		if err != nil {
			for _, u := range built {
				u.Discard()
			}
			return Change{}, err
		}
		built = append(built, u)
	}
	for _, t := range slices.Concat(p.Stop, p.Restart) {
		s.stop(t.Unit())
	}
	for i, t := range todo {
		s.start(ctx, c, t, built[i])
	}
	s.cur = c
	return p.Change(), nil
}

// Wait waits for every unit's goroutine to return: after ctx of Apply
// ended, every unit has stopped once Wait returns.
func (s *Supervisor) Wait() { s.wg.Wait() }

// stop ends the unit named key and waits for its goroutine.
func (s *Supervisor) stop(key string) {
	s.mu.Lock()
	st := s.units[key]
	s.mu.Unlock()
	if st == nil {
		return
	}
	st.cancel()
	<-st.done
	s.mu.Lock()
	delete(s.units, key)
	s.mu.Unlock()
}

// start runs u, the unit of t, on its own goroutine.
func (s *Supervisor) start(ctx context.Context, c *Config, t *Table, u Unit) {
	uctx, cancel := context.WithCancel(ctx)
	st := &unitState{table: t, conf: c, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.units[t.Unit()] = st
	s.mu.Unlock()
	s.wg.Add(1)
	go s.supervise(uctx, st, u)
}

// supervise runs st's unit until ctx ends or it ends by itself: a unit
// that fails is marked failed, reported, built again after a back-off
// and run again.
func (s *Supervisor) supervise(ctx context.Context, st *unitState, u Unit) {
	defer s.wg.Done()
	defer close(st.done)
	defer s.mark(st, nil)
	wait := s.opt.Backoff
	for {
		var err error
		if u == nil { // after a failure: built again (an interface may have gone)
			u, err = s.opt.Build(st.conf, st.table)
		}
		if err == nil {
			err = s.run(ctx, st, u)
			u = nil
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			s.emit(Event{Kind: UnitEnded, Table: st.table})
			return
		}
		s.mark(st, err)
		s.emit(Event{Kind: UnitFailed, Table: st.table, Err: err, Backoff: wait})
		if !idle.Sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, s.opt.MaxBackoff)
	}
}

// run runs u once, listed as st's unit meanwhile.
func (s *Supervisor) run(ctx context.Context, st *unitState, u Unit) error {
	s.mu.Lock()
	st.unit = u
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		st.unit = nil
		s.mu.Unlock()
	}()
	return u.Run(ctx, func() { s.mark(st, nil) })
}

// mark records why st's unit is not running (nil: it runs, or stopped).
func (s *Supervisor) mark(st *unitState, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.err = err
	if err != nil {
		st.failures++
		s.failures++
	}
}

func (s *Supervisor) emit(e Event) {
	if s.opt.Events != nil {
		s.opt.Events(e)
	}
}
