package main

import (
	"hash/fnv"
	"log/slog"
	"sync"

	"github.com/ringfire/ringfire/internal/supervisor"
	"github.com/ringfire/ringfire/replica"
)

// unitBuilder builds the units of a ringfire run file's tables for the
// supervisor (its build is the supervisor.BuildFunc): a [[serve]] table
// is a serveUnit, a [[mirror]] table a mirrorUnit, a [[record]] table a
// recordUnit, each configured by the table's keys as by the flags of the
// same names.
//
// A mirror whose ring the same file serves is a hub: its Published hands
// each applied record to the server of that ring (Server.Handoff), one hop
// and no wake-up; the serve unit waits for the mirror to create the ring.
type unitBuilder struct {
	log *slog.Logger
	// hubs are the live servers by ring path: a serve unit stores its
	// server there, a mirror of the same ring loads it to hand off.
	hubMu sync.Mutex
	hubs  map[string]*liveServer
	// loops, when the file's loop key is set, run the units' senders and
	// mirror loops, each unit on one of them (loopFor); serveRunConfig
	// runs them for the process's life.
	loops []*replica.Loop
}

func newUnitBuilder(log *slog.Logger) *unitBuilder {
	return &unitBuilder{log: log, hubs: map[string]*liveServer{}}
}

// build makes t's unit (its keys checked); a mirror of a ring c serves
// hands off to it. It is called by Apply and by a unit's goroutine when
// the unit restarts after a failure.
func (b *unitBuilder) build(c *supervisor.Config, t *supervisor.Table) (supervisor.Unit, error) {
	log := b.log.With("unit", t.Kind, "ring", t.Name)
	if t.Kind == supervisor.Record {
		u, err := recordUnitOf(t, log)
		if err != nil {
			return nil, err
		}
		return supervisedRecord{u}, nil
	}
	if t.Kind == supervisor.Serve {
		u, err := serveUnitOf(t, log, c.Loop)
		if err != nil {
			return nil, err
		}
		u.cfg.Loop = b.loopFor(t)
		u.live = b.hub(t.Ring)
		u.await = servedAndMirrored(c, t.Ring)
		return supervisedServe{u}, nil
	}
	var published func(uint64)
	if servedAndMirrored(c, t.Ring) {
		hub := b.hub(t.Ring)
		published = func(seq uint64) {
			if s := hub.p.Load(); s != nil {
				s.Handoff(seq)
			}
		}
	}
	u, err := mirrorUnitOf(t, log, published, c.Loop, b.loopFor(t))
	if err != nil {
		return nil, err
	}
	return supervisedMirror{u}, nil
}

// loopFor is the loop of t's unit (nil: none): the same for the unit
// across reloads, by a hash of its key, so that a kept unit stays where
// it runs.
func (b *unitBuilder) loopFor(t *supervisor.Table) *replica.Loop {
	if len(b.loops) == 0 {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(t.Unit()))
	return b.loops[h.Sum32()%uint32(len(b.loops))]
}

func servedAndMirrored(c *supervisor.Config, ring string) bool {
	var served, mirrored bool
	for _, t := range c.Tables {
		served = served || t.Kind == supervisor.Serve && t.Ring == ring
		mirrored = mirrored || t.Kind == supervisor.Mirror && t.Ring == ring
	}
	return served && mirrored
}

func (b *unitBuilder) hub(ring string) *liveServer {
	b.hubMu.Lock()
	defer b.hubMu.Unlock()
	if h := b.hubs[ring]; h != nil {
		return h
	}
	h := new(liveServer)
	b.hubs[ring] = h
	return h
}
