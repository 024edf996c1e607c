package bench

import (
	"slices"

	"github.com/ringfire/ringfire/internal/bench/deployed"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// DefaultOpenRates are the openloop section's default offered rates,
// records/s; the run's zero-loss rate is swept too (openZeroLoss).
var DefaultOpenRates = []int{20_000, 200_000, 1_000_000, 2_000_000, 3_000_000, 4_000_000}

// planOpenLoop lists the openloop measurements: one per wait of
// cfg.Waits (a loop's only over a unicast transport), each a process per
// endpoint (package deployed).
func planOpenLoop(cfg *Config, rep *report.Report) []step {
	var steps []step
	tr := cfg.OpenTransport
	rep.Machine.Network += "; openloop: the deployed section's two namespaces, over its first veth pair"
	for _, w := range cfg.Waits {
		if _, _, loop := report.LoopWait(w); loop && deployed.Multicast(tr) {
			continue // a run file's mirrors are unicast here
		}
		steps = append(steps, step{"openloop " + tr + " wait " + w, func(r *rig) error {
			zl, from := openZeroLoss(cfg, rep, w)
			o, err := r.dep.OpenLoop(tr, w, openRates(cfg.OpenRates, zl))
			o.ZeroLoss, o.ZeroLossFrom = zl, from
			if err == nil || len(o.Steps) > 0 {
				rep.OpenLoop = append(rep.OpenLoop, o)
			}
			return err
		}})
	}
	return steps
}

// openZeroLoss is the zero-loss rate the open loop in wait sweeps too:
// the stress section's for the same transport and wait when the run
// measured one ("stress"), else cfg.OpenZeroLoss ("flag"; 0: none).
func openZeroLoss(cfg *Config, rep *report.Report, wait string) (int, string) {
	for _, z := range rep.ZeroLoss {
		if z.Transport == cfg.OpenTransport && report.ZeroLossWait(z.Wait) == report.ZeroLossWait(wait) && z.Rate > 0 {
			return z.Rate, "stress"
		}
	}
	if cfg.OpenZeroLoss > 0 {
		return cfg.OpenZeroLoss, "flag"
	}
	return 0, ""
}

// openRates are rates and the zero-loss rate zl (unless 0), ascending,
// each once.
func openRates(rates []int, zl int) []int {
	out := slices.Clone(rates)
	if zl > 0 {
		out = append(out, zl)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
