package deployed

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// The hand-offs alone: what a record costs to pass between processes
// that poll, with no network and no ringfire process. The processes, in
// namespace N1, pass one record on six times through six rings in
// /dev/shm, as the two deployed round trips do:
//
//	six   pinger → relay 1 → relay 2 → relay 3 → relay 4 → relay 5 → pinger
//	      (the six-process round trip: pinger, serve, mirror, echo, serve,
//	      mirror)
//	loop  pinger → relay 1 → relay 2 → relay 3 → relay 2 → relay 1 → pinger
//	      (the four-process one: pinger, run 1, run 2, echo, run 2, run 1)
//
// The pinger is the deployed pinger; each relay copies its rings as the
// rings section's echo does, polling all of them and calling sched_yield
// after a pass that found nothing (spin: polling again). What a round trip
// takes above its relay is the two datagrams and ringfire's own work.

// RelayProcs are the process counts of the relays: six, and a loop's four.
var RelayProcs = []int{6, 4}

// relayChains are the relays' hops: hop k ends at process chain[k+1]
// (the pinger is 0, and the last hop ends at it).
var relayChains = map[int][]int{6: {0, 1, 2, 3, 4, 5}, 4: {0, 1, 2, 3, 2, 1}}

// RelayWaits are the waits a relay is measured in: the polling ones (a
// relay's processes poll whatever their wait; sleeping ones would be
// measured against a floor they do not have).
var RelayWaits = []string{"yield", "spin"}

// Relay measures the relay of n processes (relayChains), each
// waiting on its rings as wait says.
func (b *Bench) Relay(n int, wait string) (report.Deployed, error) {
	cfg := &b.cfg
	chain, ok := relayChains[n]
	if !ok {
		return report.Deployed{}, fmt.Errorf("deployed: no relay of %d processes", n)
	}
	d, dir, err := b.deployedDir("relay-")
	if err != nil {
		return report.Deployed{}, err
	}
	defer os.RemoveAll(dir)
	ring := func(k int) string { return filepath.Join(dir, fmt.Sprintf("R%d", k)) }
	var ps procSet
	defer func() { ps.stopAll() }() // ps as it is at return
	spec := role.Spec{Wait: wait, Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples, Limit: report.Duration(cfg.DeployedFor)}
	ping := spec
	ping.Role, ping.Ring, ping.Read = role.RingPinger, ring(0), ring(len(chain)-1)
	pinger, err := ps.roleReady(d, d.n1, "pinger", ping)
	if err != nil {
		return report.Deployed{}, err
	}
	for p := 1; p < n; p++ {
		relay := spec
		relay.Role = role.RingsEcho
		for k := 1; k < len(chain); k++ {
			if chain[k] == p { // hop k-1 ends here; this process writes hop k
				relay.Reads, relay.Rings = append(relay.Reads, ring(k-1)), append(relay.Rings, ring(k))
			}
		}
		if _, err := ps.roleReady(d, d.n1, fmt.Sprintf("relay %d", p), relay); err != nil {
			return report.Deployed{}, err
		}
	}
	res, _, err := ps.measure(pinger, cfg, false)
	res.Transport, res.Wait, res.Procs = "shm", wait, n
	return res, err
}
