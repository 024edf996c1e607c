package bench

import "github.com/ringfire/ringfire/internal/bench/report"

// planLines lists the lines section: one step, its zero-loss sweeps over
// direct links and its cases through the delay lines (package deployed).
func planLines(cfg *Config, rep *report.Report) []step {
	rep.Machine.Network += "; lines: the deployed section's two namespaces, line A on veth0 and line B on veth1 direct, " +
		"or each line through a middle namespace of its own, a forwarder process there delaying or dropping frames (no netem here)"
	return []step{{"lines " + cfg.Lines.Transport, func(r *rig) error {
		l, err := r.dep.Lines()
		if err == nil || len(l.Cases) > 0 || len(l.OneLine.Sweep) > 0 {
			rep.Lines = &l
		}
		return err
	}}}
}
