package bench

import (
	"fmt"
	"os"
	"path/filepath"
)

// The hand-offs alone: what a record costs to pass between processes
// that poll as the deployed roles do, with no network and no ringfire
// process. N processes in namespace N1 pass one record on through N rings
// in /dev/shm (the deployed roles' own code):
//
//	pinger ── R0 ──▶ relay 1 ── R1 ──▶ … relay N-1 ── RN-1 ──▶ pinger
//
// With four processes it is the floor of the four-process round trip (a
// loop per host), with six that of the six-process one, in the same wait:
// what is left of a round trip above it is the two datagrams and
// ringfire's own work.

// RelayProcs are the process counts of the hand-off floor.
var RelayProcs = []int{4, 6}

// relayWait is the roles' wait of a deployed wait name: a loop's mode for
// a loop's name (loop-yield: yield).
func relayWait(wait string) string {
	if _, mode, ok := loopWait(wait); ok {
		return mode
	}
	return wait
}

// deployedRelay measures n processes passing one record on, each waiting
// on its ring as wait says (roleWait).
func (r *rig) deployedRelay(cfg *Config, n int, wait string) (Deployed, error) {
	if n < 2 {
		return Deployed{}, fmt.Errorf("bench: relay of %d processes: want 2 or more", n)
	}
	d, err := r.deployedNet(cfg)
	if err != nil {
		return Deployed{}, err
	}
	dir, err := os.MkdirTemp(r.dir, "relay-")
	if err != nil {
		return Deployed{}, err
	}
	defer os.RemoveAll(dir)
	ring := func(i int) string { return filepath.Join(dir, fmt.Sprintf("R%d", i)) }
	var ps procSet
	defer func() { ps.stopAll() }() // ps as it is at return
	spec := roleSpec{Wait: wait, Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples, Limit: Duration(cfg.DeployedFor)}
	ping := spec
	ping.Role, ping.Ring, ping.Read = roleRingPinger, ring(0), ring(n-1)
	pinger, err := ps.roleReady(d, d.n1, "pinger", ping)
	if err != nil {
		return Deployed{}, err
	}
	for i := 1; i < n; i++ {
		relay := spec
		relay.Role, relay.Ring, relay.Read = roleRingEcho, ring(i), ring(i-1)
		if _, err := ps.roleReady(d, d.n1, fmt.Sprintf("relay %d", i), relay); err != nil {
			return Deployed{}, err
		}
	}
	res, err := ps.measure(pinger, cfg)
	res.Transport, res.Wait, res.Procs = "shm", wait, n
	return res, err
}
