package supervisor

// Plan is what applying a new file to a running old one does, unit by
// unit (Table.Unit).
type Plan struct {
	Start   []*Table // in the new file only: built and started
	Restart []*Table // changed (another Fingerprint): stopped, then started from the new table
	Stop    []*Table // in the old file only: stopped
	Keep    []*Table // unchanged: left running, untouched
}

// Change counts a Plan's units, for the caller's log.
type Change struct{ Started, Stopped, Restarted, Kept int }

// Change counts p's units.
func (p Plan) Change() Change {
	return Change{Started: len(p.Start), Stopped: len(p.Stop), Restarted: len(p.Restart), Kept: len(p.Keep)}
}

// Diff is the plan that turns old's units (nil: none run yet) into new's.
// It is a pure function of the two files: a unit is its table's Unit key,
// and a table whose Fingerprint changed restarts that unit alone. Start,
// Restart and Keep hold new's tables in new's order, Stop old's in old's.
func Diff(old, new *Config) Plan {
	var p Plan
	was := map[string]*Table{}
	if old != nil {
		for i := range old.Tables {
			was[old.Tables[i].Unit()] = &old.Tables[i]
		}
	}
	is := map[string]bool{}
	for i := range new.Tables {
		t := &new.Tables[i]
		is[t.Unit()] = true
		switch o := was[t.Unit()]; {
		case o == nil:
			p.Start = append(p.Start, t)
		case o.Fingerprint() != t.Fingerprint():
			p.Restart = append(p.Restart, t)
		default:
			p.Keep = append(p.Keep, t)
		}
	}
	if old != nil {
		for i := range old.Tables {
			if t := &old.Tables[i]; !is[t.Unit()] {
				p.Stop = append(p.Stop, t)
			}
		}
	}
	return p
}
