package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ringfire/ringfire/replica"
)

// unitSet is what a process runs, as its endpoints report it: the served
// rings and the mirrors, by name. serve and mirror hold one unit; run
// changes the set on reload and records the units that failed.
type unitSet struct {
	loops   []*replica.Loop // the file's loops (none without a loop key); set before the metrics start
	mu      sync.Mutex
	serves  []*serveUnit
	mirrors []*mirrorUnit
	failed  map[string]error // unit key → why it is not running
}

// ringName is a ring's default name: its file's base name.
func ringName(path string) string { return filepath.Base(path) }

func (s *unitSet) addServe(u *serveUnit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serves = append(s.serves, u)
}

func (s *unitSet) addMirror(u *mirrorUnit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mirrors = append(s.mirrors, u)
}

// remove drops the units (run's reload).
func (s *unitSet) remove(sv *serveUnit, mu *mirrorUnit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serves = slices.DeleteFunc(s.serves, func(u *serveUnit) bool { return u == sv })
	s.mirrors = slices.DeleteFunc(s.mirrors, func(u *mirrorUnit) bool { return u == mu })
}

// setFailed records why the unit named key stopped (nil: it runs).
func (s *unitSet) setFailed(key string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = map[string]error{}
	}
	if err == nil {
		delete(s.failed, key)
		return
	}
	s.failed[key] = err
}

func (s *unitSet) snapshot() ([]*serveUnit, []*mirrorUnit) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(s.failed)) {
		errs = append(errs, fmt.Errorf("%s: %w", k, s.failed[k]))
	}
	return errors.Join(errs...)
}

// ready is nil once every served ring listens and every mirror has
// connected to its source once; otherwise it names those that have not.
func (s *unitSet) ready() error {
	if err := s.healthy(); err != nil {
		return err
	}
	serves, mirrors := s.snapshot()
	var waiting []string
	for _, u := range serves {
		if u.live.p.Load() == nil {
			waiting = append(waiting, "serve "+u.name+": not listening yet")
		}
	}
	for _, u := range mirrors {
		if u.m.Stats().Connects == 0 {
			waiting = append(waiting, "mirror "+u.name+": not connected to "+u.source+" yet")
		}
	}
	if len(waiting) > 0 {
		return errors.New(strings.Join(waiting, "\n"))
	}
	return nil
}
