package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/ringfire/ringfire/internal/bench/deployed"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

type step struct {
	name string
	run  func(*rig) error
}

// plan lists the measurements of cfg, each adding to rep.
func plan(cfg *Config, rep *report.Report) []step {
	var steps []step
	has := func(s string) bool { return slices.Contains(cfg.Sections, s) }
	for _, tr := range cfg.Transports {
		if has("pingpong") {
			steps = append(steps, step{"pingpong " + tr, func(r *rig) error {
				l, err := r.pingPong(tr, cfg.Record, cfg.PingPong)
				if err == nil {
					rep.PingPong = append(rep.PingPong, l)
				}
				return err
			}})
			if dt := datagramPath(tr); dt != "" {
				steps = append(steps, step{"datagram round trip " + dt, func(r *rig) error {
					l, err := r.datagramRoundTrip(dt, cfg.Record, cfg.PingPong)
					if err == nil {
						rep.Datagram = append(rep.Datagram, l)
					}
					return err
				}})
			}
		}
		if has("stress") {
			steps = append(steps, step{"stress " + tr, func(r *rig) error {
				runs, err := r.sweep(tr, cfg.Record, cfg.Rates, cfg.Stress)
				rep.Stress = append(rep.Stress, runs...)
				return err
			}})
			for _, w := range cfg.Waits {
				steps = append(steps, step{"zero-loss " + tr + " wait " + w, func(r *rig) error {
					best, err := r.zeroLoss(tr, w, cfg.Record, cfg.Rates, cfg.Stress)
					rep.ZeroLoss = append(rep.ZeroLoss, best)
					return err
				}})
			}
		}
	}
	return append(steps, planRest(cfg, rep, has)...)
}

func planRest(cfg *Config, rep *report.Report, has func(string) bool) []step {
	var steps []step
	if has("stages") {
		tr := bestOf(cfg.Transports)
		for i, rate := range cfg.StageRates {
			steps = append(steps, step{fmt.Sprintf("stages over %s at %d/s", tr, rate), func(r *rig) error {
				ls, err := r.stages(tr, cfg.Record, cfg.Stages, rate, i == 0)
				rep.Stages = append(rep.Stages, ls...)
				return err
			}})
		}
	}
	for _, tr := range FanoutTransports {
		if !has("fanout") || !slices.Contains(cfg.Transports, tr) {
			continue
		}
		for _, n := range cfg.Fanout {
			steps = append(steps, step{fmt.Sprintf("fanout %s to %d", tr, n), func(r *rig) error {
				f, err := r.fanout(tr, n, cfg.Record, cfg.Stages)
				if err == nil {
					rep.Fanout = append(rep.Fanout, f)
				}
				return err
			}})
		}
	}
	if has("deployed") {
		steps = append(steps, planDeployed(cfg, rep)...)
	}
	if has("rings") {
		steps = append(steps, planRings(cfg, rep)...)
	}
	if has("openloop") {
		steps = append(steps, planOpenLoop(cfg, rep)...)
	}
	if has("lines") {
		steps = append(steps, planLines(cfg, rep)...)
	}
	if has("sendcost") {
		for _, n := range cfg.Fanout {
			steps = append(steps, step{fmt.Sprintf("send cost to %d", n), func(r *rig) error {
				c, err := r.sendCost(n, cfg.Record, 500*time.Millisecond)
				if err == nil {
					rep.SendCost = append(rep.SendCost, c)
				}
				return err
			}})
		}
	}
	if has("archive") {
		steps = append(steps, planArchive(cfg, rep)...)
	}
	return steps
}

// planDeployed lists the deployed measurements: each transport the
// section supports with each wait mode (a loop's only over unicast), the
// hand-offs alone in each of those waits that polls, then the datagram
// alone in each style.
func planDeployed(cfg *Config, rep *report.Report) []step {
	var steps []step
	for _, tr := range cfg.Transports {
		if !slices.Contains(deployed.Transports, tr) {
			continue
		}
		for _, w := range cfg.Waits {
			if _, _, loop := report.LoopWait(w); loop && deployed.Multicast(tr) {
				continue // a run file's mirrors are unicast here
			}
			steps = append(steps, step{"deployed " + tr + " wait " + w, func(r *rig) error {
				d, err := r.dep.RoundTrip(tr, w)
				if err == nil {
					rep.Deployed = append(rep.Deployed, d)
				}
				return err
			}})
		}
	}
	rep.Machine.Network += "; deployed: two namespaces joined by two veth pairs, one per direction"
	var relays []string
	for _, w := range cfg.Waits {
		if w := report.ModeOf(w); slices.Contains(deployed.RelayWaits, w) && !slices.Contains(relays, w) {
			relays = append(relays, w)
		}
	}
	for _, w := range relays {
		for _, n := range deployed.RelayProcs {
			steps = append(steps, step{fmt.Sprintf("deployed relay %d wait %s", n, w), func(r *rig) error {
				d, err := r.dep.Relay(n, w)
				if err == nil {
					rep.DeployedRelay = append(rep.DeployedRelay, d)
				}
				return err
			}})
		}
	}
	for _, style := range role.DatagramStyles {
		steps = append(steps, step{"deployed datagram " + style, func(r *rig) error {
			d, err := r.dep.Datagram(style)
			if err == nil {
				rep.DeployedDatagram = append(rep.DeployedDatagram, d)
			}
			return err
		}})
	}
	return steps
}

// bestOf is the transport the stages use: AF_XDP unicast when measured.
func bestOf(trs []string) string {
	for _, t := range []string{"xdp-unicast", "udp-unicast"} {
		if slices.Contains(trs, t) {
			return t
		}
	}
	return trs[0]
}

// ringCounts are cfg's ring counts with one ring alone first, which the
// others are compared with.
func ringCounts(cfg *Config) []int {
	ns := []int{1}
	for _, n := range cfg.Rings {
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns
}

// planRings lists the rings measurements: every ring count in each wait
// mode, one ring alone first; then the floor at every count.
func planRings(cfg *Config, rep *report.Report) []step {
	var steps []step
	rep.Machine.Network += "; rings: the deployed section's two namespaces and two veth pairs, one ringfire run in each"
	for _, w := range cfg.RingsWaits {
		for _, n := range ringCounts(cfg) {
			steps = append(steps, step{fmt.Sprintf("rings %d wait %s", n, w), func(r *rig) error {
				x, err := r.dep.Rings(n, w)
				if err == nil {
					rep.Rings = append(rep.Rings, x)
				}
				return err
			}})
		}
	}
	for _, n := range ringCounts(cfg) {
		steps = append(steps, step{fmt.Sprintf("rings floor: %d datagrams at once", n), func(r *rig) error {
			x, err := r.dep.RingsFloor(n)
			if err == nil {
				rep.RingsFloor = append(rep.RingsFloor, x)
			}
			return err
		}})
	}
	return steps
}
