package main

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// engine runs the units of a ringfire run file and applies a reread file:
// units added start, units removed stop, changed units restart alone, the
// others run on untouched.
//
//	SIGHUP ─▶ run: parse ─▶ engine.apply ─▶ build every new unit (a bad
//	          table refuses the whole file) ─▶ stop removed and changed ─▶
//	          start added and changed
//	each unit: its own goroutine, context and restart back-off
//
// A mirror whose ring the same file serves is a hub: its Published hands
// each applied record to the server of that ring (Server.Handoff), one hop
// and no wake-up; the serve unit waits for the mirror to create the ring.
type engine struct {
	log *slog.Logger
	set unitSet
	// hubs are the live servers by ring path: a serve unit stores its
	// server there, a mirror of the same ring loads it to hand off.
	hubMu   sync.Mutex
	hubs    map[string]*liveServer
	running map[string]*runningUnit // by tableSpec.unit()
	wg      sync.WaitGroup
	// loops, when the file's loop key is set, run the units' senders and
	// mirror loops, each unit on one of them (loopFor); serveRunConfig
	// runs them for the process's life.
	loops []*replica.Loop
	// backoff is the first wait before a failed unit restarts; it doubles
	// to maxBackoff.
	backoff, maxBackoff time.Duration
}

// runningUnit is a started unit.
type runningUnit struct {
	fp     string
	cancel context.CancelFunc
	done   chan struct{}
}

func newEngine(log *slog.Logger) *engine {
	return &engine{log: log, hubs: map[string]*liveServer{}, running: map[string]*runningUnit{},
		backoff: time.Second, maxBackoff: 30 * time.Second}
}

// change is what apply did, for its log line.
type change struct{ started, stopped, restarted, kept int }

// apply makes the running units those of c. Every unit c adds or changes
// is built (its keys checked) before anything stops: a file with a bad
// table changes nothing.
func (e *engine) apply(ctx context.Context, c *runConfig) (change, error) {
	var ch change
	want := map[string]*tableSpec{}
	var todo []*tableSpec
	for i := range c.tables {
		t := &c.tables[i]
		want[t.unit()] = t
		if r := e.running[t.unit()]; r == nil || r.fp != t.fingerprint() {
			todo = append(todo, t)
		}
	}
	built := make([]unit, 0, len(todo))
	for _, t := range todo {
		u, err := e.build(t, c)
		if err != nil {
			for _, u := range built {
				u.discard()
			}
			return ch, err
		}
		built = append(built, u)
	}
	for k, r := range e.running {
		if t := want[k]; t == nil || t.fingerprint() != r.fp {
			e.stop(r)
			delete(e.running, k)
			if t == nil {
				ch.stopped++
			} else {
				ch.restarted++
			}
		}
	}
	for i, t := range todo {
		e.start(ctx, *t, c, built[i])
	}
	ch.started = len(todo) - ch.restarted
	ch.kept = len(c.tables) - len(todo)
	return ch, nil
}

// unit is a built unit: a serve or a mirror.
type unit struct {
	serve  *serveUnit
	mirror *mirrorUnit
}

// discard releases a unit that will not run.
func (u unit) discard() {
	if u.mirror != nil {
		u.mirror.m.Close()
	}
}

// build makes t's unit (its keys checked); a mirror of a ring c serves
// hands off to it.
func (e *engine) build(t *tableSpec, c *runConfig) (unit, error) {
	log := e.log.With("unit", t.kind, "ring", t.name)
	if t.kind == "serve" {
		u, err := serveUnitOf(t, log, c.loop)
		if err != nil {
			return unit{}, err
		}
		u.cfg.Loop = e.loopFor(t)
		u.live = e.hub(t.ring)
		u.await = servedAndMirrored(c, t.ring)
		return unit{serve: u}, nil
	}
	var published func(uint64)
	if servedAndMirrored(c, t.ring) {
		hub := e.hub(t.ring)
		published = func(seq uint64) {
			if s := hub.p.Load(); s != nil {
				s.Handoff(seq)
			}
		}
	}
	u, err := mirrorUnitOf(t, log, published, c.loop, e.loopFor(t))
	return unit{mirror: u}, err
}

// loopFor is the loop of t's unit (nil: none): the same for the unit
// across reloads, by a hash of its key, so that a kept unit stays where
// it runs.
func (e *engine) loopFor(t *tableSpec) *replica.Loop {
	if len(e.loops) == 0 {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(t.unit()))
	return e.loops[h.Sum32()%uint32(len(e.loops))]
}

func servedAndMirrored(c *runConfig, ring string) bool {
	var served, mirrored bool
	for _, t := range c.tables {
		served = served || t.kind == "serve" && t.ring == ring
		mirrored = mirrored || t.kind == "mirror" && t.ring == ring
	}
	return served && mirrored
}

func (e *engine) hub(ring string) *liveServer {
	e.hubMu.Lock()
	defer e.hubMu.Unlock()
	if h := e.hubs[ring]; h != nil {
		return h
	}
	h := new(liveServer)
	e.hubs[ring] = h
	return h
}

// start runs u, t's unit, on its own goroutine until stop or ctx: a unit
// that fails is logged, reported by /healthz, built again and restarted
// after a back-off.
func (e *engine) start(ctx context.Context, t tableSpec, c *runConfig, u unit) {
	uctx, cancel := context.WithCancel(ctx)
	r := &runningUnit{fp: t.fingerprint(), cancel: cancel, done: make(chan struct{})}
	e.running[t.unit()] = r
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(r.done)
		defer e.set.setFailed(t.unit(), nil)
		wait := e.backoff
		for {
			var err error
			if u == (unit{}) { // after a failure: built again (an interface may have gone)
				u, err = e.build(&t, c)
			}
			if err == nil {
				err = e.runOnce(uctx, &t, u)
				u = unit{}
			}
			if uctx.Err() != nil {
				return
			}
			if err == nil { // a mirror with once = true whose source left
				e.log.Info("unit ended", "unit", t.kind, "ring", t.name)
				return
			}
			e.set.setFailed(t.unit(), err)
			e.log.Error("unit failed, restarting", "unit", t.kind, "ring", t.name, "err", err, "in", wait)
			if !sleepCtx(uctx, wait) {
				return
			}
			wait = min(2*wait, e.maxBackoff)
		}
	}()
}

// runOnce runs u, t's unit, until it ends.
func (e *engine) runOnce(ctx context.Context, t *tableSpec, u unit) error {
	s, m := u.serve, u.mirror
	if s != nil {
		e.set.addServe(s)
		defer e.set.remove(s, nil)
		return s.run(ctx, func(context.Context, *replica.Server) { e.set.setFailed(t.unit(), nil) }, func(st replica.ServerStats) {
			s.log.Info("stopped serving", "mirrors", st.Mirrors, "write_seq", st.WriteSeq, "last_sent", st.LastSent,
				"records", st.Records, "datagrams", st.Datagrams, "tcp_records", st.TCPRecord, "naks_answered", st.NaksAnswered)
		})
	}
	e.set.addMirror(m)
	defer e.set.remove(nil, m)
	err := m.run(ctx)
	st := m.m.Stats()
	m.log.Info("stopped mirroring", "transport", st.Transport, "next", st.Next, "records", st.Records,
		"datagrams", st.Datagrams, "naks", st.NaksSent, "gaps", st.Gaps, "connects", st.Connects)
	return err
}

// stop ends a unit and waits for it.
func (e *engine) stop(r *runningUnit) {
	r.cancel()
	<-r.done
}

// wait waits for every unit (after ctx ended).
func (e *engine) wait() { e.wg.Wait() }

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

var errNoUnits = errors.New("the file has no [[serve]] or [[mirror]] table")
