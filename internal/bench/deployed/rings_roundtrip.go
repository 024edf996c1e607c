package deployed

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// Rings measures n rings in wait mode wait: the zero-loss phase, then the
// round trips.
func (b *Bench) Rings(n int, wait string) (report.Rings, error) {
	cfg := &b.cfg
	if n < 1 || n > MaxRings {
		return report.Rings{}, fmt.Errorf("deployed: %d rings: want 1..%d", n, MaxRings)
	}
	d, dir, err := b.deployedDir(fmt.Sprintf("rings-%d-", n))
	if err != nil {
		return report.Rings{}, err
	}
	defer os.RemoveAll(dir)
	res := report.Rings{Rings: n, Transport: RingsTransport, Wait: wait}
	if res.Sweep, res.ZeroLoss, err = b.ringsZeroLoss(cfg, d, dir, n, wait); err != nil {
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
func ringsRoundTrip(cfg *Config, d *deployedNet, dir string, n int, wait string, res *report.Rings) error {
	out, back := loopHops(d, dir, RingsTransport, wait, n)
	var ps procSet
	defer func() { ps.stopRuns() }() // ps as it is at return
	spec := role.Spec{Wait: wait, Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples, Limit: report.Duration(cfg.DeployedFor)}
	ping, echo := spec, spec
	ping.Role, ping.Rings, ping.Reads = role.RingsPinger, out.rings(), back.copies()
	echo.Role, echo.Rings, echo.Reads = role.RingsEcho, back.rings(), out.copies()
	pinger, err := ps.loopProcs(d, dir, ping, echo, out, back)
	if err != nil {
		return err
	}
	for _, rt := range []*report.RingsRoundTrip{&res.AtOnce, &res.InTurn} {
		line, wall, cpu, _, _, err := ps.timed(pinger, cfg, false)
		if err != nil {
			return err
		}
		var got role.RingsResult
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			return fmt.Errorf("deployed: pinger result %q: %w", line, err)
		}
		if len(got.PerRing) != n {
			return fmt.Errorf("deployed: pinger reported %d rings, want %d", len(got.PerRing), n)
		}
		*rt = report.RingsRoundTrip{PerRing: got.PerRing, Lat: got.All, Measured: report.Duration(wall), CPU: cpu}
	}
	return nil
}
