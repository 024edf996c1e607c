package deployed

import (
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// floorPort is the first UDP port of the rings' floor; socket i takes
// floorPort + i on both sides.
const floorPort = 8100

// FloorWait is how the floor's two threads wait: sched_yield between
// non-blocking receives, as a loop-yield run process does.
const FloorWait = "yield"

// RingsFloor measures the rings section's floor for n rings: n kernel UDP
// datagrams in flight at once between a pinger process in N1 and an echo
// process in N2 over veth0, one thread each polling its n sockets, no
// ring and no ringfire. What n datagrams at once cost each one against
// one alone is what no loop can beat on this machine.
func (b *Bench) RingsFloor(n int) (report.RingsFloor, error) {
	cfg := &b.cfg
	if n < 1 || n > MaxRings {
		return report.RingsFloor{}, fmt.Errorf("deployed: %d datagrams: want 1..%d", n, MaxRings)
	}
	d, err := b.deployedNet()
	if err != nil {
		return report.RingsFloor{}, err
	}
	onA := netip.AddrPortFrom(d.pair.AAddr, floorPort).String()
	onB := netip.AddrPortFrom(d.pair.BAddr, floorPort).String()
	var ps procSet
	defer func() { ps.stopAll() }() // ps as it is at return
	spec := role.Spec{Wait: FloorWait, Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples,
		Limit: report.Duration(cfg.DeployedFor), Sockets: n}
	ping, echo := spec, spec
	ping.Role, ping.Local, ping.Peer = role.DgramsPinger, onA, onB
	echo.Role, echo.Local, echo.Peer = role.DgramsEcho, onB, onA
	if _, err := ps.roleReady(d, d.n2, "echo", echo); err != nil {
		return report.RingsFloor{}, err
	}
	pinger, err := ps.role(d, d.n1, "pinger", ping)
	if err != nil {
		return report.RingsFloor{}, err
	}
	line, wall, cpu, _, _, err := ps.timed(pinger, cfg, false)
	if err != nil {
		return report.RingsFloor{}, err
	}
	var got role.RingsResult
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		return report.RingsFloor{}, fmt.Errorf("deployed: floor pinger result %q: %w", line, err)
	}
	if len(got.PerRing) != n {
		return report.RingsFloor{}, fmt.Errorf("deployed: floor pinger reported %d sockets, want %d", len(got.PerRing), n)
	}
	return report.RingsFloor{Datagrams: n, Wait: FloorWait,
		AtOnce: report.RingsRoundTrip{PerRing: got.PerRing, Lat: got.All, Measured: report.Duration(wall), CPU: cpu}}, nil
}
