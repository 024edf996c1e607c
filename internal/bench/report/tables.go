package report

import (
	"slices"
	"strconv"
	"time"
)

// table is one section of the report: a title, a header and rows of
// preformatted cells, rendered as text (WriteTable) or markdown
// (WriteMarkdown).
type table struct {
	title  string
	header []string
	rows   [][]string
}

// section is one part of a run (ringfire-bench --sections) with the
// tables of its figures.
type section struct {
	name   string // as --sections names it
	title  string // the page's heading
	tables []table
}

// sections returns the report's sections in the order of a run, each
// with its non-empty tables; a section without one is left out.
func (r *Report) sections() []section {
	all := []section{
		{"pingpong", "Ping-pong", []table{
			latencyTable("ping-pong round trip (µs)", "transport", r.PingPong),
			latencyTable("datagram round trip, transport only (µs)", "transport", r.Datagram)}},
		{"stress", "Stress and zero-loss rate", []table{r.stressTable(), r.zeroLossTable()}},
		{"stages", "Stages", []table{latencyTable("stages: push to read (µs)", "stage", r.Stages)}},
		{"fanout", "Fan-out", []table{r.fanoutTable()}},
		{"sendcost", "Send cost", []table{r.sendCostTable()}},
		{"deployed", "Deployed", []table{r.deployedTable(), r.deployedDatagramTable(), r.deployedRelayTable(),
			r.deployedCPUTable(), r.deployedHopsTable(), r.deployedTailsTable()}},
		{"rings", "Rings", []table{r.ringsTable(), r.ringsFloorTable(), r.ringsPerRingTable(), r.ringsSweepTable()}},
		{"openloop", "Open loop", []table{r.openLoopKneeTable(), r.openLoopStepsTable()}},
		{"lines", "A/B lines", []table{r.linesTargetsTable(), r.linesCasesTable(), r.linesRepairTable(), r.linesSweepTable()}},
		{"archive", "Archive", []table{r.archiveRecordTable(), r.archiveRefTable(), r.archiveSweepTable(),
			r.archiveReplayTable(), r.archiveSeekTable(), r.archiveCompressTable(), r.archiveCatchupTable()}},
	}
	var out []section
	for _, s := range all {
		var ts []table
		for _, t := range s.tables {
			if len(t.rows) > 0 {
				ts = append(ts, t)
			}
		}
		if len(ts) > 0 {
			s.tables = ts
			out = append(out, s)
		}
	}
	return out
}

// tables returns the report's non-empty tables in order.
func (r *Report) tables() []table {
	var out []table
	for _, s := range r.sections() {
		out = append(out, s.tables...)
	}
	return out
}

// machineRows returns the machine and run description as key/value
// pairs, leaving out what is unknown.
func (r *Report) machineRows() [][2]string {
	m := r.Machine
	var kv [][2]string
	add := func(k, v string) {
		if v != "" && v != "0" {
			kv = append(kv, [2]string{k, v})
		}
	}
	add("cpu", m.CPU)
	add("cores", itoa(m.Cores))
	add("kernel", m.Kernel)
	add("go", m.Go)
	add("gomaxprocs", strconv.Itoa(m.Procs))
	add("load", m.Load)
	add("network", m.Network)
	if m.Stall.Readings > 0 {
		add("stalls", m.Stall.String())
	}
	if !r.Started.IsZero() {
		add("started", r.Started.Format(time.RFC3339))
	}
	if r.Elapsed > 0 {
		add("elapsed", time.Duration(r.Elapsed).Round(time.Millisecond).String())
	}
	if r.Record > 0 {
		add("record", itoa(r.Record)+" bytes")
	}
	return kv
}

// itoa formats n, with "0" for zero so that callers can drop it.
func itoa(n int) string { return fmtCount(uint64(max(n, 0))) }

// percentileHeader names the columns of latencyRow after the name.
var percentileHeader = []string{"samples", "avg", "min", "p50", "p75", "p90", "p99", "p99.9", "p99.99", "max"}

// latencyRow formats one distribution as a row.
func latencyRow(name string, p Percentiles) []string {
	return []string{name, fmtCount(uint64(max(p.Samples, 0))), fmtUS(p.Avg), fmtUS(p.Min),
		fmtUS(p.P50), fmtUS(p.P75), fmtUS(p.P90), fmtUS(p.P99), fmtUS(p.P999), fmtUS(p.P9999), fmtUS(p.Max)}
}

// latencyTable tabulates named distributions.
func latencyTable(title, first string, ls []Latency) table {
	t := table{title: title, header: append([]string{first}, percentileHeader...)}
	for _, l := range ls {
		t.rows = append(t.rows, latencyRow(l.Name, l.Lat))
	}
	return t
}

// stressTable tabulates the open-loop runs, per transport and rate.
func (r *Report) stressTable() table {
	t := table{title: "stress: open loop at a fixed offered rate", header: []string{
		"transport", "offered/s", "achieved/s", "delivered", "disorder",
		"p50 µs", "p99 µs", "NAKs", "retransmitted", "gaps"}}
	for _, s := range r.Stress {
		t.rows = append(t.rows, []string{s.Transport, FormatSI(float64(s.Rate)), FormatSI(s.Achieved),
			fmtPct(s.DeliveredPct), fmtCount(s.Disorder), fmtUS(s.Lat.P50), fmtUS(s.Lat.P99),
			fmtCount(s.NAKs), fmtCount(s.Retransmitted), fmtCount(s.Gaps)})
	}
	return t
}

// ratioBases are the transports the zero-loss rates are compared with, as
// the bench names them.
var ratioBases = []string{"udp-unicast", "udp-multicast"}

// zeroLossTable tabulates each transport's best lossless rate per wait and
// its ratio to the kernel UDP transports' in the same wait.
func (r *Report) zeroLossTable() table {
	t := table{title: "zero-loss rate (records/s)", header: []string{"transport", "wait", "offered/s", "achieved/s"}}
	var bases []string
	for _, name := range ratioBases {
		if slices.ContainsFunc(r.ZeroLoss, func(z ZeroLoss) bool { return z.Transport == name && z.Rate > 0 }) {
			t.header = append(t.header, "vs "+name)
			bases = append(bases, name)
		}
	}
	for _, z := range r.ZeroLoss {
		row := []string{z.Transport, z.waitName(), zeroLossRate(z), FormatSI(z.Achieved)}
		for _, name := range bases {
			ratio := "-"
			if b, ok := r.zeroLoss(name, z.Wait); ok && b.Rate > 0 {
				ratio = fmtRatio(float64(z.Rate), float64(b.Rate))
			}
			row = append(row, ratio)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// zeroLoss finds a transport's zero-loss entry in one wait.
func (r *Report) zeroLoss(transport, wait string) (ZeroLoss, bool) {
	for _, z := range r.ZeroLoss {
		if z.Transport == transport && z.Wait == wait {
			return z, true
		}
	}
	return ZeroLoss{}, false
}

// zeroLossRate formats the rate, "≥" when it is only a lower bound and
// "none" when no rate of the sweep was lossless.
func zeroLossRate(z ZeroLoss) string {
	switch {
	case z.Rate <= 0:
		return "none"
	case z.Capped:
		return "≥ " + FormatSI(float64(z.Rate))
	}
	return FormatSI(float64(z.Rate))
}

// fanoutTable tabulates push-to-read latency spread across mirrors and
// the producer's Push cost with the mirrors attached.
func (r *Report) fanoutTable() table {
	t := table{title: "fan-out: push to read at each mirror (µs), push cost (ns)", header: []string{
		"transport", "mirrors", "p50 min–max", "p99 min–max", "push ns", "base ns", "Δ push"}}
	for _, f := range r.Fanout {
		p50 := make([]float64, len(f.PerMirror))
		p99 := make([]float64, len(f.PerMirror))
		for i, p := range f.PerMirror {
			p50[i], p99[i] = p.P50, p.P99
		}
		t.rows = append(t.rows, []string{f.Transport, itoa(f.Mirrors), fmtRange(p50), fmtRange(p99),
			fmtNs(f.PushNs), fmtNs(f.BaseNs), fmtDelta(f.PushNs, f.BaseNs)})
	}
	return t
}

// sendCostTable compares one sendmmsg to N mirrors with N sendto calls.
func (r *Report) sendCostTable() table {
	t := table{title: "send cost per mirror (ns)", header: []string{
		"mirrors", "sendmmsg", "sendto", "sendto/sendmmsg"}}
	for _, s := range r.SendCost {
		t.rows = append(t.rows, []string{itoa(s.Mirrors), fmtNs(s.SendmmsgNs), fmtNs(s.SendtoNs),
			fmtRatio(s.SendtoNs, s.SendmmsgNs)})
	}
	return t
}
