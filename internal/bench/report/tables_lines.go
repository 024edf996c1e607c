package report

import (
	"strconv"
	"time"
)

// The lines section's tables: the targets (issue 41) with their ratios
// and met or not, the one way of each case, the repairs and per-line
// counters, and the two zero-loss sweeps.

// The targets' bounds.
const (
	LinesZeroLossMin = 0.8  // two lines' zero-loss rate ÷ one line's, at least
	LinesDelayedMax  = 1.10 // a delayed line's case p50 ÷ line A alone's, at most
	LinesNakSpread   = 1.5  // NAKs ÷ (frames × lossA × lossB), within 1/1.5..1.5
)

// metOrNot is a target's verdict: dash when not measured.
func metOrNot(measured, ok bool) string {
	switch {
	case !measured:
		return dash
	case ok:
		return "met"
	}
	return "not met"
}

// linesTargets are the three targets as rows: target, measured,
// base, ratio, bound, verdict.
func (l *Lines) linesTargets() [][]string {
	var rows [][]string
	one, two := float64(l.OneLine.ZeroLoss.Rate), float64(l.TwoLines.ZeroLoss.Rate)
	rows = append(rows, []string{"zero-loss rate, two lines ÷ one (direct links)", zeroLossRate(l.TwoLines.ZeroLoss),
		zeroLossRate(l.OneLine.ZeroLoss), fmtRatio(two, one), "≥ " + strconv.FormatFloat(LinesZeroLossMin, 'f', 2, 64) + "×",
		metOrNot(one > 0 && two > 0, two >= LinesZeroLossMin*one)})
	// The fast line alone: the mirror on line A of a source sending on
	// both, both forwarders as busy as in the delayed cases.
	base, okBase := l.Case(LinesAOfAB)
	for _, name := range []string{LinesBSlow, LinesASlow} {
		c, ok := l.Case(name)
		p50, b50 := c.Step.Lat.P50, base.Step.Lat.P50
		rows = append(rows, []string{"p50 one way, " + name + " ÷ " + LinesAOfAB + " (line A alone)", fmtUS(p50), fmtUS(b50), fmtRatio(p50, b50),
			"≤ " + strconv.FormatFloat(LinesDelayedMax, 'f', 2, 64) + "×", metOrNot(ok && okBase && b50 > 0, p50 <= LinesDelayedMax*b50)})
	}
	if clean, ok := l.Case(LinesAB); ok { // no target: the delay alone, two lines either way
		for _, name := range []string{LinesBSlow, LinesASlow} {
			if c, ok := l.Case(name); ok {
				rows = append(rows, []string{"p50 one way, " + name + " ÷ A+B clean", fmtUS(c.Step.Lat.P50),
					fmtUS(clean.Step.Lat.P50), fmtRatio(c.Step.Lat.P50, clean.Step.Lat.P50), "none: the delay's cost alone", dash})
			}
		}
	}
	if direct, ok := l.Case(LinesDirect); ok { // no target: two lines' own cost, no forwarder
		if c, ok := l.Case(LinesDirect2); ok {
			rows = append(rows, []string{"p50 one way, " + LinesDirect2 + " ÷ A direct", fmtUS(c.Step.Lat.P50),
				fmtUS(direct.Step.Lat.P50), fmtRatio(c.Step.Lat.P50, direct.Step.Lat.P50), "none: two lines' own cost", dash})
		}
	}
	if direct, ok := l.Case(LinesDirect); ok { // no target: what the delay lines cost
		for _, name := range []string{LinesA, LinesAB} {
			if c, ok := l.Case(name); ok {
				rows = append(rows, []string{"p50 one way, " + name + " (through the forwarders) ÷ A direct", fmtUS(c.Step.Lat.P50),
					fmtUS(direct.Step.Lat.P50), fmtRatio(c.Step.Lat.P50, direct.Step.Lat.P50), "none: the forwarders' cost", dash})
			}
		}
	}
	if c, ok := l.Case(LinesLossy); ok {
		want := float64(c.Frames()) * c.LossA * c.LossB
		r := float64(c.NAKs) / want
		rows = append(rows, []string{"NAKs ÷ frames × loss A × loss B, zero gaps", fmtCount(c.NAKs) + " NAKs, " + fmtCount(c.Gaps) + " gaps",
			strconv.FormatFloat(want, 'f', 0, 64), fmtRatio(float64(c.NAKs), want), "1/1.5..1.5×, 0 gaps",
			metOrNot(want > 0, c.Gaps == 0 && r <= LinesNakSpread && r >= 1/LinesNakSpread)})
	}
	return rows
}

func (r *Report) linesTargetsTable() table {
	t := table{title: "lines: targets (issue 41), ratios from this run", header: []string{"target", "measured", "base", "ratio", "bound", "verdict"}}
	if r.Lines != nil {
		t.rows = r.Lines.linesTargets()
	}
	return t
}

// fmtDelay is a line's delay, dash for none.
func fmtDelay(d Duration) string {
	if d == 0 {
		return dash
	}
	return time.Duration(d).String()
}

func (r *Report) linesCasesTable() table {
	t := table{title: "lines: one way through the delay lines at a fixed rate (µs; CPU in cores)", header: []string{
		"case", "lines taken", "delay A", "delay B", "loss A", "loss B", "samples", "p50", "p99", "p99.9", "max", "lapped+lost",
		"CPU run 1", "CPU run 2", "CPU forwarders", "CPU producer+reader"}}
	if r.Lines == nil {
		return t
	}
	for _, c := range r.Lines.Cases {
		s := c.Step
		name := c.Name
		if c.Direct {
			name += " (no forwarder)"
		}
		lines := strconv.Itoa(c.Lines)
		if c.Sent > c.Lines {
			lines += " of " + strconv.Itoa(c.Sent)
		}
		t.rows = append(t.rows, []string{name, lines, fmtDelay(c.DelayA), fmtDelay(c.DelayB),
			fmtPct(100 * c.LossA), fmtPct(100 * c.LossB), fmtCount(uint64(max(s.Lat.Samples, 0))),
			fmtUS(s.Lat.P50), fmtUS(s.Lat.P99), fmtUS(s.Lat.P999), fmtUS(s.Lat.Max), fmtCount(s.Lapped + s.Lost),
			cpuOf(s.CPU, RoleRun1), cpuOf(s.CPU, RoleRun2), cpuOf(s.CPU, "forwarder A", "forwarder B"), cpuOf(s.CPU, RoleProducer, RoleReader)})
	}
	return t
}

func (r *Report) linesRepairTable() table {
	t := table{title: "lines: repairs and per-line counters of each case, warm-up included (DATA frames)", header: []string{
		"case", "frames", "dropped A", "dropped B", "dropped on both", "NAKs", "NAKs ÷ both", "gaps",
		"A first", "A late", "A lost", "B first", "B late", "B lost", "forwarder late max"}}
	if r.Lines == nil {
		return t
	}
	for _, c := range r.Lines.Cases {
		frames := dash // no forwarder counted them
		if len(c.Forwarders) > 0 {
			frames = fmtCount(c.Frames())
		}
		row := []string{c.Name, frames, fmtCount(c.dropped(LinesLineA)), fmtCount(c.dropped(LinesLineB)),
			fmtCount(c.LostBoth), fmtCount(c.NAKs), fmtRatio(float64(c.NAKs), float64(c.LostBoth)), fmtCount(c.Gaps)}
		for _, line := range []string{LinesLineA, LinesLineB} {
			lc, ok := lineOf(c.PerLine, line)
			if !ok {
				row = append(row, dash, dash, dash)
				continue
			}
			row = append(row, fmtCount(lc.First), fmtCount(lc.Late), fmtCount(lc.Lost))
		}
		var late Duration
		for _, f := range c.Forwarders {
			late = max(late, f.MaxLate)
		}
		row = append(row, fmtDelay(late))
		t.rows = append(t.rows, row)
	}
	return t
}

func lineOf(ls []LineCounts, line string) (LineCounts, bool) {
	for _, l := range ls {
		if l.Line == line {
			return l, true
		}
	}
	return LineCounts{}, false
}

func (r *Report) linesSweepTable() table {
	t := table{title: "lines: zero-loss sweep over direct links, one line and two (records/s; CPU in cores)", header: []string{
		"lines", "offered/s", "achieved/s", "lossless", "drained", "NAKs", "retransmitted", "gaps", "drops", "CPU run 1", "CPU run 2"}}
	if r.Lines == nil {
		return t
	}
	yes := map[bool]string{true: "yes", false: "no"}
	for _, sw := range []LinesSweep{r.Lines.OneLine, r.Lines.TwoLines} {
		for _, s := range sw.Sweep {
			t.rows = append(t.rows, []string{strconv.Itoa(sw.Lines), FormatSI(float64(s.Rate)), FormatSI(s.Achieved),
				yes[s.Lossless()], yes[s.Drained], fmtCount(s.NAKs), fmtCount(s.Retransmitted), fmtCount(s.Gaps), fmtCount(s.Drops),
				cpuOf(s.CPU, RoleRun1), cpuOf(s.CPU, RoleRun2)})
		}
	}
	return t
}
