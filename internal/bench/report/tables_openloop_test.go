package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openStep is a step at rate with p50 and p99 (µs), lapped and lost
// records, the CPU of a loop's four processes.
func openStep(rate int, p50, p99 float64, lapped, lost uint64) OpenStep {
	n := uint64(rate) * 3
	return OpenStep{Rate: rate, Duration: Duration(3 * time.Second), Pushed: n, Received: n - lapped - lost, Achieved: float64(rate) * 0.99, Wakes: n / 2,
		Lapped: lapped, Lost: lost, Lat: pct(int64(n-lapped-lost), p50, p99, 4*p99),
		CPU: []ProcCPU{{Role: RoleProducer, PerSec: 0.1}, {Role: RoleRun1, PerSec: 0.9}, {Role: RoleRun2, PerSec: 0.8}, {Role: RoleReader, PerSec: 0.95}}}
}

// openReport is two waits swept: the default, whose 4 M/s queues, and
// loop-yield, kept up to its zero-loss rate.
func openReport() *Report {
	return &Report{Record: 64, OpenLoop: []OpenLoop{
		{Transport: "xdp-unicast", Wait: "default", ZeroLoss: 6_000_000, ZeroLossFrom: "stress", Steps: []OpenStep{
			openStep(20_000, 10.5, 68, 0, 0), openStep(1_000_000, 21.9, 328, 0, 0), openStep(2_000_000, 29.8, 1150, 0, 0),
			openStep(4_000_000, 1600, 100_000, 0, 0), openStep(6_000_000, 261_000, 306_000, 2_900_000, 0)}},
		{Transport: "xdp-unicast", Wait: "loop-yield", ZeroLoss: 4_000_000, ZeroLossFrom: "flag", Steps: []OpenStep{
			openStep(20_000, 10.8, 87, 0, 0), openStep(1_000_000, 25.2, 202, 0, 0), openStep(4_000_000, 41.5, 990, 0, 0)}},
	}}
}

// The knee is the highest rate up to which every rate kept p99 ≤ 1 ms and
// lost nothing; ≥ when that is the top of the sweep, none when the lowest
// rate did not.
func TestOpenLoopKnee(t *testing.T) {
	for _, c := range []struct {
		name   string
		steps  []OpenStep
		rate   int
		capped bool
	}{
		{"the p99 crosses 1 ms", []OpenStep{openStep(1e5, 10, 900, 0, 0), openStep(1e6, 20, 1000, 0, 0), openStep(2e6, 30, 1001, 0, 0)}, 1e6, false},
		{"a rate after the crossing comes back under", []OpenStep{openStep(1e5, 10, 50, 0, 0), openStep(1e6, 20, 5000, 0, 0), openStep(2e6, 30, 90, 0, 0)}, 1e5, false},
		{"every rate kept", []OpenStep{openStep(1e5, 10, 50, 0, 0), openStep(1e6, 20, 60, 0, 0)}, 1e6, true},
		{"a record lapped", []OpenStep{openStep(1e5, 10, 50, 0, 0), openStep(1e6, 20, 60, 1, 0)}, 1e5, false},
		{"a record lost", []OpenStep{openStep(1e5, 10, 50, 0, 0), openStep(1e6, 20, 60, 0, 7)}, 1e5, false},
		{"the lowest rate not kept", []OpenStep{openStep(1e5, 10, 2000, 0, 0), openStep(1e6, 20, 60, 0, 0)}, 0, false},
		{"nothing read", []OpenStep{{Rate: 1e5, Pushed: 10}}, 0, false},
		{"no step", nil, 0, false},
	} {
		rate, capped := OpenLoop{Steps: c.steps}.Knee()
		if rate != c.rate || capped != c.capped {
			t.Errorf("%s: knee %d (capped %v), want %d (capped %v)", c.name, rate, capped, c.rate, c.capped)
		}
	}
}

// The tables set each wait's knee beside its zero-loss rate, and give
// every rate's one way, losses and each process's CPU.
func TestOpenLoopTables(t *testing.T) {
	var b bytes.Buffer
	if err := openReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	wantRow(t, out, "xdp-unicast", "default", "1.00 M", "21.9", "328.0", "6.00 M", "stress", "16.67%")
	wantRow(t, out, "xdp-unicast", "loop-yield", "≥ 4.00 M", "41.5", "990.0", "4.00 M", "flag", "100.00%")
	wantRow(t, out, "xdp-unicast", "default", "4.00 M", "3.96 M", "2.0", "1600", "100000", "160000", "400000", "0", "0", "0.10", "0.90", "0.80", "0.95")
	wantRow(t, out, "xdp-unicast", "default", "6.00 M (zero-loss)", "5.94 M", "2.0", "261000", "306000", "489600", "1224000", "2,900,000", "0")
	var md bytes.Buffer
	if err := openReport().WriteMarkdown(&md, "bench"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Open loop\n", "### openloop: the knee", "### openloop: one way", "](bench/openloop.svg)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// openloop.svg draws p50, p99 and p99.9 of each wait against the offered
// rate, a marker per rate, with the knee's 1 ms across; it is written,
// and linked, only when the report has open-loop figures.
func TestOpenLoopSVG(t *testing.T) {
	r := openReport()
	r.OpenLoop[1].Steps[2].Lat.P999 = 0 // missing: no marker
	info := parseSVG(t, r.openLoopSVG())
	want := []string{"default p50", "default p99", "default p99.9", "loop-yield p50", "loop-yield p99", "loop-yield p99.9"}
	if strings.Join(info.series, ",") != strings.Join(want, ",") {
		t.Errorf("series %q, want %q", info.series, want)
	}
	for s, n := range map[string]int{"default p50": 5, "default p99.9": 5, "loop-yield p99": 3, "loop-yield p99.9": 2} {
		if info.circles[s] != n {
			t.Errorf("%s: %d markers, want %d", s, info.circles[s], n)
		}
	}
	for _, label := range []string{"1 ms: the knee's bound", "10 k/s", "1 M/s", "10 M/s", "1 ms", "1 s", "p99.9"} {
		if _, ok := info.textY[label]; !ok {
			t.Errorf("chart lacks %q", label)
		}
	}
	dir := t.TempDir()
	paths, err := r.WriteSVG(dir)
	if err != nil || len(paths) != 3 || paths[2] != filepath.Join(dir, "openloop.svg") {
		t.Fatalf("WriteSVG: %v, %v; want openloop.svg third", paths, err)
	}
	r.OpenLoop = nil
	if paths, err := r.WriteSVG(t.TempDir()); err != nil || len(paths) != 2 {
		t.Errorf("without open-loop figures WriteSVG wrote %v (%v), want latency.svg and throughput.svg", paths, err)
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md, ""); err != nil || strings.Contains(md.String(), "openloop.svg") {
		t.Errorf("a page without open-loop figures links openloop.svg (%v)", err)
	}
}
