package bench

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
)

// Rings is the rings section at one ring count and wait mode: Rings rings
// served and mirrored by one ringfire run process on each side.
type Rings struct {
	Rings     int    `json:"rings"`
	Transport string `json:"transport"`
	Wait      string `json:"wait"`
	// ZeroLoss is the highest aggregate rate (all rings together, split
	// evenly) every mirror received whole, no gap, no NAK, no repair;
	// Sweep every aggregate rate tried.
	ZeroLoss ZeroLoss    `json:"zero_loss"`
	Sweep    []RingsStep `json:"sweep"`
	// AtOnce is each ring's round trip with a record in flight on every
	// ring at once, InTurn with one record in flight in all, ring after
	// ring (what N rings cost a ring when the others are idle).
	AtOnce RingsRoundTrip `json:"at_once"`
	InTurn RingsRoundTrip `json:"in_turn"`
}

// RingsRoundTrip is the round trips of a set of rings.
type RingsRoundTrip struct {
	PerRing  []Percentiles `json:"per_ring"`
	Lat      Percentiles   `json:"round_trip"` // every ring's round trips together
	Measured Duration      `json:"measured"`   // wall time of the round trips
	CPU      []ProcCPU     `json:"cpu"`        // run 1, run 2, pinger, echo
}

// RingsStep is the rings' zero-loss phase at one aggregate rate.
type RingsStep struct {
	Rate          int       `json:"offered_per_s"` // all rings together
	Pushed        uint64    `json:"pushed"`
	Achieved      float64   `json:"achieved_per_s"` // pushed ÷ time until every mirror held them (or the drain bound)
	Drained       bool      `json:"drained"`        // every mirror held every record within drainWait
	NAKs          uint64    `json:"naks"`           // the mirrors' NAK frames
	Gaps          uint64    `json:"gaps"`           // records the mirrors lost (GAP)
	Retransmitted uint64    `json:"retransmitted"`  // records the serves resent for NAKs
	Drops         uint64    `json:"drops"`          // datagrams the mirrors could not use (far ahead, foreign...)
	CPU           []ProcCPU `json:"cpu"`            // run 1 and run 2, pushing and draining
}

// Lossless reports whether every mirror got every record, no repair.
func (s RingsStep) Lossless() bool {
	return s.Drained && s.NAKs == 0 && s.Gaps == 0 && s.Retransmitted == 0
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
// mode, one ring alone first.
func planRings(cfg *Config, rep *Report) []step {
	var steps []step
	rep.Machine.Network += "; rings: the deployed section's two namespaces and two veth pairs, one ringfire run in each"
	for _, w := range cfg.RingsWaits {
		for _, n := range ringCounts(cfg) {
			steps = append(steps, step{fmt.Sprintf("rings %d wait %s", n, w), func(r *rig) error {
				x, err := r.rings(cfg, n, w)
				if err == nil {
					rep.Rings = append(rep.Rings, x)
				}
				return err
			}})
		}
	}
	return steps
}

// rings measures n rings in wait mode wait: the zero-loss phase, then the
// round trips.
func (r *rig) rings(cfg *Config, n int, wait string) (Rings, error) {
	if n < 1 || n > MaxRings {
		return Rings{}, fmt.Errorf("bench: %d rings: want 1..%d", n, MaxRings)
	}
	d, dir, err := r.deployedDir(cfg, fmt.Sprintf("rings-%d-", n))
	if err != nil {
		return Rings{}, err
	}
	defer os.RemoveAll(dir)
	res := Rings{Rings: n, Transport: RingsTransport, Wait: wait}
	if res.Sweep, res.ZeroLoss, err = r.ringsZeroLoss(cfg, d, dir, n, wait); err != nil {
		return res, fmt.Errorf("zero-loss: %w", err)
	}
	if err := ringsRoundTrip(cfg, d, dir, n, wait, &res); err != nil {
		return res, fmt.Errorf("round trip: %w", err)
	}
	return res, nil
}

// metricsAt is where a run process in the namespace of addr serves its
// metrics.
func metricsAt(addr netip.Addr) netip.AddrPort { return netip.AddrPortFrom(addr, ringsMetricsPort) }

// ringsRoundTrip measures the round trips of the rings, at once and in
// turn: the pinger and the echo, then run 1 (serves Ai, mirrors Bi) and
// run 2 (mirrors Ai, serves Bi).
func ringsRoundTrip(cfg *Config, d *deployedNet, dir string, n int, wait string, res *Rings) error {
	out, back := loopHops(d, dir, RingsTransport, wait, n)
	var ps procSet
	defer func() { ps.stopRuns() }() // ps as it is at return
	spec := roleSpec{Wait: wait, Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples, Limit: Duration(cfg.DeployedFor)}
	ping, echo := spec, spec
	ping.Role, ping.Rings, ping.Reads = roleRingsPinger, out.rings(), back.copies()
	echo.Role, echo.Rings, echo.Reads = roleRingsEcho, back.rings(), out.copies()
	pinger, err := ps.loopProcs(d, dir, ping, echo, out, back)
	if err != nil {
		return err
	}
	for _, rt := range []*RingsRoundTrip{&res.AtOnce, &res.InTurn} {
		line, wall, cpu, _, err := ps.timed(pinger, cfg)
		if err != nil {
			return err
		}
		var got ringsResult
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			return fmt.Errorf("bench: pinger result %q: %w", line, err)
		}
		if len(got.PerRing) != n {
			return fmt.Errorf("bench: pinger reported %d rings, want %d", len(got.PerRing), n)
		}
		*rt = RingsRoundTrip{PerRing: got.PerRing, Lat: got.All, Measured: Duration(wall), CPU: cpu}
	}
	return nil
}

// ringsResult is the rings pinger's result line.
type ringsResult struct {
	PerRing []Percentiles `json:"per_ring"`
	All     Percentiles   `json:"all"`
}
