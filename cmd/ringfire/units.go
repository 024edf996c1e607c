package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ringfire/ringfire/internal/supervisor"
	"github.com/ringfire/ringfire/replica"
)

// unitSet is what a process runs, as its endpoints report it: the served
// rings and the mirrors, by name. serve adds its one unit; ringfire run's
// units are those its supervisor runs now, and their health its.
type unitSet struct {
	loops   []*replica.Loop        // the file's loops (none without a loop key); set before the metrics start
	sup     *supervisor.Supervisor // ringfire run's (nil: serve's)
	mu      sync.Mutex
	serves  []*serveUnit
	mirrors []*mirrorUnit
	records []*recordUnit
}

// ringName is a ring's default name: its file's base name.
func ringName(path string) string { return filepath.Base(path) }

func (s *unitSet) addServe(u *serveUnit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serves = append(s.serves, u)
}

func (s *unitSet) addRecord(u *recordUnit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, u)
}

// recorders is the record units running now.
func (s *unitSet) recorders() []*recordUnit {
	if s.sup != nil {
		var records []*recordUnit
		for _, st := range s.sup.Snapshot() {
			if u, ok := st.Unit.(supervisedRecord); ok {
				records = append(records, u.u)
			}
		}
		return records
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// snapshot is the units running now.
func (s *unitSet) snapshot() ([]*serveUnit, []*mirrorUnit) {
	if s.sup != nil {
		var serves []*serveUnit
		var mirrors []*mirrorUnit
		for _, st := range s.sup.Snapshot() {
			switch u := st.Unit.(type) {
			case supervisedServe:
				serves = append(serves, u.u)
			case supervisedMirror:
				mirrors = append(mirrors, u.u)
			}
		}
		return serves, mirrors
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.serves), slices.Clone(s.mirrors)
}

// server is the running server of the ring named name; "" names the only
// served ring.
func (s *unitSet) server(name string) (*replica.Server, error) {
	serves, _ := s.snapshot()
	var names []string
	for _, u := range serves {
		names = append(names, u.name)
		if u.name == name || name == "" && len(serves) == 1 {
			if srv := u.live.p.Load(); srv != nil {
				return srv, nil
			}
			return nil, fmt.Errorf("ring %q: not serving now", u.name)
		}
	}
	slices.Sort(names)
	switch {
	case len(serves) == 0:
		return nil, errors.New("not serving any ring")
	case name == "":
		return nil, fmt.Errorf("this process serves %d rings: name one of %s (?ring=NAME)", len(serves), strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("no served ring named %q: this process serves %s", name, strings.Join(names, ", "))
}

// healthy is nil unless a unit failed: then it names them.
func (s *unitSet) healthy() error {
	if s.sup != nil {
		return s.sup.Healthy()
	}
	return nil
}

// ready is nil once every served ring listens and every mirror has
// connected to its source once; otherwise it names those that have not.
func (s *unitSet) ready() error {
	if s.sup != nil {
		return s.sup.Ready()
	}
	serves, mirrors := s.snapshot()
	var waiting []string
	for _, u := range serves {
		if err := u.ready(); err != nil {
			waiting = append(waiting, "serve "+u.name+": "+err.Error())
		}
	}
	for _, u := range mirrors {
		if err := u.ready(); err != nil {
			waiting = append(waiting, "mirror "+u.name+": "+err.Error())
		}
	}
	for _, u := range s.recorders() {
		if err := u.ready(); err != nil {
			waiting = append(waiting, "record "+u.name+": "+err.Error())
		}
	}
	if len(waiting) > 0 {
		return errors.New(strings.Join(waiting, "\n"))
	}
	return nil
}

// supervisedServe is a serve unit as ringfire run's supervisor runs it:
// it is up once it listens, and logs its counters as it stops.
type supervisedServe struct{ u *serveUnit }

func (s supervisedServe) Run(ctx context.Context, up func()) error {
	u := s.u
	return u.run(ctx, func(context.Context, *replica.Server) { up() }, func(st replica.ServerStats) {
		u.log.Info("stopped serving", "mirrors", st.Mirrors, "write_seq", st.WriteSeq, "last_sent", st.LastSent,
			"records", st.Records, "datagrams", st.Datagrams, "tcp_records", st.TCPRecord, "naks_answered", st.NaksAnswered,
			"history_records", st.History.Records)
	})
}

func (s supervisedServe) Ready() error { return s.u.ready() }

// Discard has nothing to release: a serve unit opens its ring in Run.
func (s supervisedServe) Discard() {}

// supervisedMirror is a mirror unit as ringfire run's supervisor runs it:
// it logs its counters as it stops. It does not call up: a mirror that
// failed is reported by /healthz until the supervisor stops it.
type supervisedMirror struct{ u *mirrorUnit }

func (s supervisedMirror) Run(ctx context.Context, _ func()) error {
	u := s.u
	err := u.run(ctx)
	st := u.m.Stats()
	u.log.Info("stopped mirroring", "transport", st.Transport, "next", st.Next, "records", st.Records,
		"datagrams", st.Datagrams, "naks", st.NaksSent, "gaps", st.Gaps, "connects", st.Connects)
	return err
}

func (s supervisedMirror) Ready() error { return s.u.ready() }

// Discard closes the mirror, which NewMirror opened.
func (s supervisedMirror) Discard() { s.u.m.Close() }
