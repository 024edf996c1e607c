package deployed

import (
	"path/filepath"
	"strings"

	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// The deployed section's four-process round trip, for a loop's wait name
// (loop-yield): a media driver's layout, one ringfire run per host
// carrying that host's serve and mirror on one Loop.
//
//	N1: pinger ── A ──▶ run 1 (serve A, mirror B') ◀── B' ── pinger
//	                      │ veth0            ▲ veth1
//	N2: echo ◀── A' ── run 2 (mirror A', serve B) ◀── B ── echo
//
// Four processes hand the record on (pinger, run 2, echo, run 1 and back
// to the pinger); run 2's mirror and serve, and run 1's, pass it within
// one thread.

// loopChain is the four-process round trip's stamps: ringfire run
// flushes its stamps as "run-" and its file's base name.
var loopChain = roundTripChain(traceProc{"run-rtt-1", "run 1 (serve A)"}, traceProc{"run-rtt-2", "run 2 (mirror A')"},
	traceProc{"run-rtt-2", "run 2 (serve B)"}, traceProc{"run-rtt-1", "run 1 (mirror B')"})

// loopHops are the two hops of a four-process round trip over tr (a
// unicast transport), n rings each way: A1..An served in N1 and mirrored
// into N2 over veth0, B1..Bn the other way over veth1.
func loopHops(d *deployedNet, dir, tr, wait string, n int) (out, back ringsHop) {
	p, q := d.pair, d.back
	udp := !strings.HasPrefix(tr, "xdp-")
	out = ringsHop{prefix: "A", dir: dir, src: p.AAddr, dst: p.BAddr, ifname: p.AIf, ports: portsA, wait: wait, n: n, udp: udp}
	back = ringsHop{prefix: "B", dir: dir, src: q.BAddr, dst: q.AAddr, ifname: q.BIf, ports: portsB, wait: wait, n: n, udp: udp}
	return out, back
}

// fourProcs is sixProcs for a loop's wait: the pinger, the echo and one
// ringfire run per namespace, one ring each way.
func (ps *procSet) fourProcs(d *deployedNet, dir, tr, wait string, ping, echo role.Spec) (*proc.Proc, error) {
	out, back := loopHops(d, dir, tr, wait, 1)
	ping.Ring, ping.Read = out.ring(0), back.copy(0)
	echo.Ring, echo.Read = back.ring(0), out.copy(0)
	return ps.loopProcs(d, dir, ping, echo, out, back)
}

// loopProcs starts the pinger, the echo and one ringfire run per
// namespace (run 1 serves A and mirrors B', run 2 mirrors A' and serves
// B), waits until both runs are ready, and returns the pinger.
func (ps *procSet) loopProcs(d *deployedNet, dir string, ping, echo role.Spec, out, back ringsHop) (*proc.Proc, error) {
	pinger, err := ps.roleReady(d, d.n1, "pinger", ping)
	if err != nil {
		return nil, err
	}
	if _, err := ps.roleReady(d, d.n2, "echo", echo); err != nil {
		return nil, err
	}
	p := d.pair
	run1, err := ps.startRun(d, d.n1, p.A, "run 1", filepath.Join(dir, "rtt-1.toml"), metricsAt(p.AAddr), []ringsHop{out}, []ringsHop{back})
	if err != nil {
		return nil, err
	}
	run2, err := ps.startRun(d, d.n2, p.B, "run 2", filepath.Join(dir, "rtt-2.toml"), metricsAt(p.BAddr), []ringsHop{back}, []ringsHop{out})
	if err != nil {
		return nil, err
	}
	for _, rr := range []*ringsRun{run1, run2} {
		if err := rr.ready(); err != nil {
			return nil, ps.explain(err)
		}
	}
	return pinger, nil
}
