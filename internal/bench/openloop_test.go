package bench

import (
	"fmt"
	"testing"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// The open loop sweeps its rates and the zero-loss rate in ascending
// order, each once: the stress section's for the same transport and wait
// when the run measured it, else the one given.
func TestOpenZeroLoss(t *testing.T) {
	cfg := &Config{OpenTransport: "xdp-unicast", OpenZeroLoss: 5_000_000}
	rep := &report.Report{ZeroLoss: []report.ZeroLoss{
		{Transport: "udp-unicast", Rate: 1_000_000},
		{Transport: "xdp-unicast", Wait: "yield", Rate: 0}, // none of the sweep's rates
		{Transport: "xdp-unicast", Wait: "default", Rate: 6_400_000},
		{Transport: "xdp-unicast", Wait: "loop-yield", Rate: 7_200_000},
	}}
	for _, c := range []struct {
		wait, from string
		rate       int
	}{{"default", "stress", 6_400_000}, {"loop-yield", "stress", 7_200_000}, {"yield", "flag", 5_000_000}, {"spin", "flag", 5_000_000}} {
		if rate, from := openZeroLoss(cfg, rep, c.wait); rate != c.rate || from != c.from {
			t.Errorf("wait %s: %d from %q, want %d from %q", c.wait, rate, from, c.rate, c.from)
		}
	}
	cfg.OpenZeroLoss = 0
	if rate, from := openZeroLoss(cfg, rep, "yield"); rate != 0 || from != "" {
		t.Errorf("no zero-loss rate measured or given: %d from %q", rate, from)
	}
	if got := openRates([]int{20_000, 4_000_000, 1_000_000}, 2_000_000); fmt.Sprint(got) != "[20000 1000000 2000000 4000000]" {
		t.Errorf("rates %v", got)
	}
	if got := openRates([]int{20_000, 1_000_000}, 1_000_000); fmt.Sprint(got) != "[20000 1000000]" {
		t.Errorf("rates %v, want the zero-loss rate once", got)
	}
}
