package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// linesCase is a case with p50 (µs), the forwarders' DATA frames and
// drops, the frames both dropped and the mirror's NAKs and gaps.
func linesCase(name string, lines int, p50 float64, frames, dropA, dropB, both, naks, gaps uint64) LinesCase {
	c := LinesCase{Name: name, Lines: lines, Sent: lines, Step: openStep(20_000, p50, 4*p50, 0, 0), LostBoth: both, NAKs: naks, Gaps: gaps,
		Forwarders: []ForwardCounts{{Line: LinesLineA, Data: frames, DataDropped: dropA, MaxLate: Duration(40 * time.Microsecond)}}}
	c.Step.CPU = append(c.Step.CPU, ProcCPU{Role: "forwarder A", PerSec: 0.2})
	if lines == 2 {
		c.Forwarders = append(c.Forwarders, ForwardCounts{Line: LinesLineB, Data: frames, DataDropped: dropB})
		c.Step.CPU = append(c.Step.CPU, ProcCPU{Role: "forwarder B", PerSec: 0.3})
		c.PerLine = []LineCounts{{Line: LinesLineA, First: frames - dropA, Late: 10, Lost: dropA}, {Line: LinesLineB, First: 20, Late: frames - dropB, Lost: dropB}}
	}
	return c
}

func linesReport(slowP50, naks, gaps uint64) *Report {
	d := Duration(200 * time.Microsecond)
	slowB := linesCase(LinesBSlow, 2, 31, 80_000, 0, 0, 0, 0, 0)
	slowB.DelayB = d
	slowA := linesCase(LinesASlow, 2, float64(slowP50), 80_000, 0, 0, 0, 0, 0)
	slowA.DelayA = d
	lossy := linesCase(LinesLossy, 2, 33, 80_000, 8_010, 7_990, 790, naks, gaps)
	lossy.LossA, lossy.LossB = 0.1, 0.1
	direct := linesCase(LinesDirect, 1, 24, 80_000, 0, 0, 0, 0, 0)
	direct.Direct, direct.Forwarders = true, nil
	oneA := linesCase(LinesAOfAB, 2, 30, 80_000, 0, 0, 0, 0, 0)
	oneA.Lines, oneA.PerLine = 1, nil
	direct2 := linesCase(LinesDirect2, 2, 26, 80_000, 0, 0, 0, 0, 0)
	direct2.Direct, direct2.Forwarders = true, nil
	return &Report{Record: 64, Lines: &Lines{Transport: "xdp-multicast", Wait: "default", Rate: 20_000,
		OneLine: LinesSweep{Lines: 1, ZeroLoss: ZeroLoss{Rate: 2_400_000}, Sweep: []RingsStep{
			{Rate: 2_400_000, Pushed: 2_400_000, Achieved: 2_390_000, Drained: true}, {Rate: 3_200_000, Pushed: 3_200_000, Achieved: 3_000_000, Drained: true, NAKs: 12}}},
		TwoLines: LinesSweep{Lines: 2, ZeroLoss: ZeroLoss{Rate: 1_600_000}, Sweep: []RingsStep{
			{Rate: 1_600_000, Pushed: 1_600_000, Achieved: 1_590_000, Drained: true}}},
		Cases: []LinesCase{direct, direct2, linesCase(LinesA, 1, 29, 80_000, 0, 0, 0, 0, 0), oneA, linesCase(LinesAB, 2, 30.5, 80_000, 0, 0, 0, 0, 0),
			slowB, slowA, lossy}}}
}

// The targets' table gives each ratio and its verdict: two lines' rate
// against one, the delayed cases' p50 against line A alone's, the NAKs
// against the frames × the two losses with zero gaps.
func TestLinesTables(t *testing.T) {
	var b bytes.Buffer
	if err := linesReport(32, 805, 0).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	wantRow(t, out, "zero-loss rate, two lines ÷ one (direct links)", "1.60 M", "2.40 M", "0.67×", "≥ 0.80×", "not met")
	wantRow(t, out, "p50 one way, A+B, B delayed ÷ A of A+B (line A alone)", "31.0", "30.0", "1.03×", "≤ 1.10×", "met")
	wantRow(t, out, "p50 one way, A+B, A delayed ÷ A of A+B (line A alone)", "32.0", "30.0", "1.07×", "≤ 1.10×", "met")
	wantRow(t, out, "NAKs ÷ frames × loss A × loss B, zero gaps", "805 NAKs, 0 gaps", "800", "1.01×", "1/1.5..1.5×, 0 gaps", "met")
	wantRow(t, out, "A+B, A delayed", "2", "200µs", "-", "0.00%", "0.00%", "60,000", "32.0", "128.0")
	wantRow(t, out, "A direct (no forwarder)", "1", "-", "-")
	wantRow(t, out, "A+B direct (no forwarder)", "2", "-", "-")
	wantRow(t, out, "A of A+B", "1 of 2", "-", "-", "0.00%", "0.00%", "60,000", "30.0")
	wantRow(t, out, "p50 one way, A (through the forwarders) ÷ A direct", "29.0", "24.0", "1.21×")
	wantRow(t, out, "p50 one way, A+B direct ÷ A direct", "26.0", "24.0", "1.08×", "none: two lines' own cost", "-")
	wantRow(t, out, "p50 one way, A+B, A delayed ÷ A+B clean", "32.0", "30.5", "1.05×", "none: the delay's cost alone", "-")
	wantRow(t, out, "p50 one way, A+B (through the forwarders) ÷ A direct", "30.5", "24.0", "1.27×", "none: the forwarders' cost", "-")
	wantRow(t, out, "A+B, loss on both", "80,000", "8,010", "7,990", "790", "805", "1.02×", "0", "71,990", "10", "8,010", "20", "72,010", "7,990", "40µs")
	wantRow(t, out, "2", "1.60 M", "1.59 M", "yes", "yes", "0")
	wantRow(t, out, "1", "3.20 M", "3.00 M", "no", "yes", "12")

	for _, c := range []struct {
		name            string
		slow, naks, gap uint64
		row             []string
	}{
		{"a delayed line past 10 %", 34, 805, 0, []string{"34.0", "30.0", "1.13×", "≤ 1.10×", "not met"}},
		{"a gap", 32, 805, 1, []string{"805 NAKs, 1 gaps", "800", "1.01×", "1/1.5..1.5×, 0 gaps", "not met"}},
		{"NAKs for what one line lost", 32, 1_300, 0, []string{"1,300 NAKs, 0 gaps", "800", "1.62×", "1/1.5..1.5×, 0 gaps", "not met"}},
	} {
		var b bytes.Buffer
		if err := linesReport(c.slow, c.naks, c.gap).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		first := "NAKs ÷ frames × loss A × loss B, zero gaps"
		if c.naks == 805 && c.gap == 0 {
			first = "p50 one way, A+B, A delayed ÷ A of A+B (line A alone)"
		}
		if !strings.Contains(b.String(), "not met") {
			t.Errorf("%s: no target not met", c.name)
		}
		wantRow(t, b.String(), first, c.row...)
	}
}

// The page has the section, its prose and its tables, and the JSON
// carries the section through a round trip.
func TestLinesMarkdownAndJSON(t *testing.T) {
	r := linesReport(32, 805, 0)
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md, "bench"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## A/B lines\n", "### lines: targets", "### lines: one way through the delay lines",
		"### lines: repairs", "### lines: zero-loss sweep", "no netem"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r.Lines)
	b, _ := json.Marshal(back.Lines)
	if string(a) != string(b) {
		t.Errorf("lines after a JSON round trip:\n%s\nwant\n%s", b, a)
	}
	r.Lines = nil
	md.Reset()
	if err := r.WriteMarkdown(&md, "bench"); err != nil || strings.Contains(md.String(), "A/B lines") {
		t.Errorf("a report without lines has the section (%v)", err)
	}
}
