package supervisor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Healthy is nil unless a unit failed and has not worked since: then it
// names each such unit and why, in the order of their keys.
func (s *Supervisor) Healthy() error {
	var errs []error
	for _, u := range s.Snapshot() {
		if u.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.Key, u.Err))
		}
	}
	return errors.Join(errs...)
}

// Ready is nil once every running unit is ready (Unit.Ready) and none has
// failed; otherwise it names, one a line, the units that are not and why.
func (s *Supervisor) Ready() error {
	if err := s.Healthy(); err != nil {
		return err
	}
	var waiting []string
	for _, u := range s.Snapshot() {
		if u.Unit == nil {
			continue
		}
		if err := u.Unit.Ready(); err != nil {
			waiting = append(waiting, u.Key+": "+err.Error())
		}
	}
	if len(waiting) > 0 {
		return errors.New(strings.Join(waiting, "\n"))
	}
	return nil
}

// UnitStatus is one unit as Snapshot saw it.
type UnitStatus struct {
	Key      string // Table.Unit
	Table    *Table
	Unit     Unit  // in Run now (nil: between two runs after a failure, or ended)
	Err      error // the failure it restarts from (nil: none, or it worked since)
	Failures int   // since it started (a reload that restarts it starts again)
}

// Snapshot is every unit of the file applied last, by key: what the
// caller's metrics read.
func (s *Supervisor) Snapshot() []UnitStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]UnitStatus, 0, len(s.units))
	for _, k := range slices.Sorted(maps.Keys(s.units)) {
		st := s.units[k]
		out = append(out, UnitStatus{Key: k, Table: st.table, Unit: st.unit, Err: st.err, Failures: st.failures})
	}
	return out
}

// Stats counts the units.
type Stats struct {
	Units    int // in the file applied last
	Running  int // in Run now
	Failed   int // failed and not working since (what Healthy names)
	Failures int // failures of every unit since New
}

// Stats counts the units now.
func (s *Supervisor) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Units: len(s.units), Failures: s.failures}
	for _, u := range s.units {
		if u.unit != nil {
			st.Running++
		}
		if u.err != nil {
			st.Failed++
		}
	}
	return st
}
