package report

import "strings"

// The deployed section's tables: the ring-to-ring round trips with their
// ratios to the datagram alone (same waiting) and of AF_XDP to kernel UDP
// (same wait mode, same addressing), the datagram alone, and the CPU of
// every process.

// datagramStyleOf is the datagram-alone style a wait mode is compared
// with: what serve and mirror wait in with that mode. Today's default
// parks in Go's netpoller; adaptive ends in blocking; a loop's is its
// mode's (loop-yield: yield).
func datagramStyleOf(wait string) string {
	switch wait = ModeOf(wait); wait {
	case "default":
		return "netpoller"
	case "adaptive":
		return "block"
	}
	return wait
}

// deployedRoles are the CPU table's columns, in the order of the loop:
// the six processes, then the two ringfire run of a loop's wait.
var deployedRoles = []string{"pinger", "serve A", "mirror A'", "echo", "serve B", "mirror B'", "run 1", "run 2"}

func (r *Report) deployedTable() table {
	t := table{title: "deployed: ring to ring round trip, every endpoint its own process (µs)", header: []string{
		"transport", "wait", "samples", "p50", "p90", "p99", "p99.9", "max", "hiccup",
		"vs datagram", "p50 ÷ dgram", "p99 ÷ dgram", "p50 ÷ udp", "p99 ÷ udp"}}
	for _, d := range r.Deployed {
		p := d.Lat
		row := []string{d.Transport, d.Wait, fmtCount(uint64(max(p.Samples, 0))),
			fmtUS(p.P50), fmtUS(p.P90), fmtUS(p.P99), fmtUS(p.P999), fmtUS(p.Max), d.Hiccups.cell()}
		style := datagramStyleOf(d.Wait)
		g, ok := findDeployed(r.DeployedDatagram, "udp", style)
		if !ok {
			style = dash
		}
		row = append(row, style, fmtRatio(p.P50, g.Lat.P50), fmtRatio(p.P99, g.Lat.P99))
		var u Deployed
		if kind, isXDP := strings.CutPrefix(d.Transport, "xdp-"); isXDP {
			u, _ = findDeployed(r.Deployed, "udp-"+kind, d.Wait)
		}
		row = append(row, fmtRatio(p.P50, u.Lat.P50), fmtRatio(p.P99, u.Lat.P99))
		t.rows = append(t.rows, row)
	}
	return t
}

func findDeployed(ds []Deployed, tr, wait string) (Deployed, bool) {
	for _, d := range ds {
		if d.Transport == tr && d.Wait == wait {
			return d, true
		}
	}
	return Deployed{}, false
}

func (r *Report) deployedDatagramTable() table {
	t := table{title: "deployed: datagram alone, two processes over the same veth (µs)", header: []string{
		"waiting", "samples", "p50", "p90", "p99", "p99.9", "max", "hiccup"}}
	for _, d := range r.DeployedDatagram {
		p := d.Lat
		t.rows = append(t.rows, []string{d.Wait, fmtCount(uint64(max(p.Samples, 0))),
			fmtUS(p.P50), fmtUS(p.P90), fmtUS(p.P99), fmtUS(p.P999), fmtUS(p.Max), d.Hiccups.cell()})
	}
	return t
}

// deployedRelayTable is the hand-offs alone, with the CPU all the
// processes used together.
func (r *Report) deployedRelayTable() table {
	t := table{title: "deployed: the hand-offs alone, one record passed on six times between processes, no network (µs)", header: []string{
		"processes", "wait", "samples", "p50", "p90", "p99", "p99.9", "max", "hiccup", "p99 ÷ p50", "CPU (cores)"}}
	for _, d := range r.DeployedRelay {
		p := d.Lat
		t.rows = append(t.rows, []string{fmtCount(uint64(d.Procs)), d.Wait, fmtCount(uint64(max(p.Samples, 0))),
			fmtUS(p.P50), fmtUS(p.P90), fmtUS(p.P99), fmtUS(p.P999), fmtUS(p.Max), d.Hiccups.cell(), fmtRatio(p.P99, p.P50), fmtCores(totalCores(d.CPU))})
	}
	return t
}

// totalCores is the cores all of cs used together per second.
func totalCores(cs []ProcCPU) float64 {
	var sum float64
	for _, c := range cs {
		sum += c.PerSec
	}
	return sum
}

// deployedCPUTable tabulates the cores each process used per second of
// its measurement, and their sum.
func (r *Report) deployedCPUTable() table {
	t := table{title: "deployed: CPU per second of measurement (cores)",
		header: append(append([]string{"transport", "wait"}, deployedRoles...), "total")}
	for _, d := range append(append([]Deployed(nil), r.Deployed...), r.DeployedDatagram...) {
		row := []string{d.Transport, d.Wait}
		for _, role := range deployedRoles {
			row = append(row, cpuOf(d.CPU, role))
		}
		t.rows = append(t.rows, append(row, fmtCores(totalCores(d.CPU))))
	}
	return t
}

// deployedHopsTable is the round trip hop by hop (ringfire-bench --trace).
func (r *Report) deployedHopsTable() table {
	t := table{title: "deployed: where the round trip goes, stamp to stamp (µs; --trace)", header: []string{
		"transport", "wait", "from", "to", "p50", "p90", "p99"}}
	for _, d := range r.Deployed {
		for _, h := range d.Hops {
			t.rows = append(t.rows, []string{d.Transport, d.Wait, h.From, h.To, fmtUS(h.Lat.P50), fmtUS(h.Lat.P90), fmtUS(h.Lat.P99)})
		}
	}
	return t
}
