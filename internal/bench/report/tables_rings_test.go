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
	return &Report{Rings: []Rings{
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
	var md bytes.Buffer
	if err := ringsReport().WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### rings: zero-loss sweep") {
		t.Errorf("markdown lacks the sweep:\n%s", md.String())
	}
}
