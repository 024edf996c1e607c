package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// ringsReport is one ring and sixteen, at once and in turn.
func ringsReport() *Report {
	rt := func(n int, p50 float64) RingsRoundTrip {
		x := RingsRoundTrip{Measured: Duration(time.Second), CPU: []ProcCPU{{Role: "run 1", PerSec: 0.9}, {Role: "run 2", PerSec: 0.8},
			{Role: "pinger", PerSec: 0.1}, {Role: "echo", PerSec: 0.05}}}
		for i := range n {
			x.PerRing = append(x.PerRing, pct(1000, p50+float64(i), 3*p50, 900))
		}
		return x
	}
	sweep := []RingsStep{{Rate: 200_000, Pushed: 200_000, Achieved: 199_000, Drained: true},
		{Rate: 400_000, Pushed: 400_000, Achieved: 390_000, Drained: true, NAKs: 2, Retransmitted: 57}}
	floor := func(n int, p50 float64) RingsFloor {
		x := rt(n, p50)
		x.CPU = []ProcCPU{{Role: "pinger", PerSec: 0.7}, {Role: "echo", PerSec: 0.6}}
		x.Lat = pct(int64(n)*1000, p50, 2*p50, 900)
		return RingsFloor{Datagrams: n, Wait: "yield", AtOnce: x}
	}
	return &Report{RingsFloor: []RingsFloor{floor(1, 8), floor(16, 40)}, Rings: []Rings{
		{Rings: 1, Transport: "xdp-unicast", Wait: "yield", ZeroLoss: ZeroLoss{Rate: 3_200_000, Achieved: 3_190_000}, Sweep: sweep,
			AtOnce: rt(1, 50), InTurn: rt(1, 50)},
		{Rings: 16, Transport: "xdp-unicast", Wait: "yield", ZeroLoss: ZeroLoss{Rate: 1_600_000, Achieved: 1_590_000}, Sweep: sweep,
			AtOnce: rt(16, 600), InTurn: rt(16, 60)},
	}}
}

// The rings tables give the ratios of the targets: aggregate zero-loss
// rate and worst ring's p50 against one ring alone.
func TestRingsTables(t *testing.T) {
	var b bytes.Buffer
	if err := ringsReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	wantRow(t, out, "16", "yield", "1.60 M", "100 k", "0.50×", "600.0–615.0", "1800", "12.30×", "60.0–75.0", "1.50×", "0.90", "0.80", "0.15")
	wantRow(t, out, "16", "yield", "16", "1,000", "615.0")
	wantRow(t, out, "1", "yield", "400 k", "390 k", "no", "yes", "2", "57", "0", "0")
	// The floor: 16 datagrams at once, the worst socket's p50 (55 µs)
	// against one alone (8 µs), beside the rings' own ratio.
	wantRow(t, out, "16", "yield", "16,000", "40.0–55.0", "120.0", "6.88×", "yield 12.30×", "1.30")
	var md bytes.Buffer
	if err := ringsReport().WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### rings: zero-loss sweep") {
		t.Errorf("markdown lacks the sweep:\n%s", md.String())
	}
}
