package report

import "strings"

// floorsTable gathers the run's floors: the stages' hand-offs alone, the
// deployed section's hand-offs alone and its datagram alone, each with
// what it bounds.
func (r *Report) floorsTable() table {
	t := table{title: "floors (µs)", header: []string{"floor", "bounds", "samples", "p50", "p90", "p99", "max"}}
	row := func(name, bounds string, p Percentiles) {
		t.rows = append(t.rows, []string{name, bounds, itoa(int(p.Samples)), fmtUS(p.P50), fmtUS(p.P90), fmtUS(p.P99), fmtUS(p.Max)})
	}
	for _, l := range r.Stages {
		if strings.Contains(l.Name, "the hand-offs alone") {
			row(l.Name, "stages", l.Lat)
		}
	}
	for _, d := range r.DeployedRelay {
		bounds := "deployed, six processes"
		if d.Procs == 4 {
			bounds = "deployed, a loop's four processes"
		}
		row("hand-offs alone, "+itoa(d.Procs)+" processes, "+d.Wait, bounds, d.Lat)
	}
	for _, d := range r.DeployedDatagram {
		row("datagram alone, "+d.Wait, "deployed, the network's share", d.Lat)
	}
	return t
}
