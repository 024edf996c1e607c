package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// A short lines run, one ringfire run per host over AF_XDP multicast on
// both lines: both zero-loss sweeps take their rates, every case times
// records through its forwarders (none for A direct), the lossy case's
// forwarders each drop DATA frames and the frames both dropped are no
// more than either's, the mirror counts both lines when there are two,
// and the page gets the section. It asserts what was measured, never how
// fast, nor the targets.
func TestBenchLines(t *testing.T) {
	out, stdout := runBench(t, 3*time.Minute, "--sections", "lines", "--rates", "20000,50000", "--stress", "300ms",
		"--lines-for", "400ms", "--open-warmup", "200ms")
	wantContains(t, "bench output", stdout, "lines: targets", "lines: one way through the delay lines")
	rep := readReport(t, out)
	l := rep.Lines
	if l == nil {
		t.Fatal("no lines section in the report")
	}
	for _, sw := range []report.LinesSweep{l.OneLine, l.TwoLines} {
		if len(sw.Sweep) == 0 || sw.Sweep[0].Rate != 20_000 || sw.Sweep[0].Pushed == 0 {
			t.Errorf("%d line(s): sweep %+v, want 20000/s first, pushed", sw.Lines, sw.Sweep)
		}
	}
	if len(l.Cases) != 8 {
		t.Fatalf("%d cases, want 8: %+v", len(l.Cases), l.Cases)
	}
	for _, c := range l.Cases {
		s := c.Step
		if s.Received == 0 || s.Received+s.Lapped+s.Lost != s.Pushed || s.Lat.Samples != int64(s.Received) || s.Lat.P50 <= 0 {
			t.Errorf("%s: pushed %d, read %d, lapped %d, lost %d, one way %+v", c.Name, s.Pushed, s.Received, s.Lapped, s.Lost, s.Lat)
		}
		if want := c.Sent; !c.Direct && (len(c.Forwarders) != want || c.Frames() == 0) {
			t.Errorf("%s: forwarders %+v, want %d that saw DATA frames", c.Name, c.Forwarders, want)
		}
		if c.Lines == 2 && len(c.PerLine) != 2 {
			t.Errorf("%s: per-line counters %+v, want A and B", c.Name, c.PerLine)
		}
	}
	lossy, _ := l.Case(report.LinesLossy)
	for _, f := range lossy.Forwarders {
		if f.DataDropped == 0 || f.DataDropped >= f.Data || lossy.LostBoth > f.DataDropped {
			t.Errorf("lossy case: forwarder %s dropped %d of %d, both %d", f.Line, f.DataDropped, f.Data, lossy.LostBoth)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	wantContains(t, "benchmarks.md", string(md), "## A/B lines", "### lines: targets")
}
