package report

import (
	"strconv"
	"strings"
)

// The rings section's tables: the summary with the ratios the section's
// targets are stated in (N rings' aggregate zero-loss rate ÷ one ring's,
// the worst ring's round-trip p50 ÷ one ring's, same wait mode), each
// ring's round trip, and the zero-loss sweep.

// ringsAlone finds the one-ring measurement of wait.
func (r *Report) ringsAlone(wait string) (Rings, bool) {
	for _, x := range r.Rings {
		if x.Rings == 1 && x.Wait == wait {
			return x, true
		}
	}
	return Rings{}, false
}

// worstP50 is the highest p50 among the rings.
func (rt RingsRoundTrip) worstP50() float64 {
	var w float64
	for _, p := range rt.PerRing {
		w = max(w, p.P50)
	}
	return w
}

// spread is the rings' p50s and p99s as "min–max".
func (rt RingsRoundTrip) spread() (p50, p99 string) {
	var p50s, p99s []float64
	for _, p := range rt.PerRing {
		p50s, p99s = append(p50s, p.P50), append(p99s, p.P99)
	}
	return fmtRange(p50s), fmtRange(p99s)
}

// cpuOf is the cores the processes of roles used together per second of
// wall time (dash: none of them measured).
func cpuOf(cs []ProcCPU, roles ...string) string {
	var sum float64
	found := false
	for _, c := range cs {
		for _, r := range roles {
			if c.Role == r {
				sum, found = sum+c.PerSec, true
			}
		}
	}
	if !found {
		return dash
	}
	return fmtCores(sum)
}

func (r *Report) ringsTable() table {
	t := table{title: "rings: N rings, one ringfire run per side, AF_XDP unicast (targets: 16 rings ≥ 0.80× one ring's zero-loss rate, per-ring p50 ≤ 1.50× one ring's)",
		header: []string{"rings", "wait", "zero-loss/s", "per ring/s", "÷ 1 ring",
			"at once p50 µs", "at once p99 µs", "at once worst p50 ÷ 1 ring", "in turn p50 µs", "in turn worst p50 ÷ 1 ring",
			"CPU run 1", "CPU run 2", "CPU pinger+echo"}}
	for _, x := range r.Rings {
		one, _ := r.ringsAlone(x.Wait)
		perRing := dash
		if x.ZeroLoss.Rate > 0 {
			perRing = FormatSI(float64(x.ZeroLoss.Rate) / float64(x.Rings))
		}
		p50, p99 := x.AtOnce.spread()
		turn, _ := x.InTurn.spread()
		c := x.AtOnce.CPU
		t.rows = append(t.rows, []string{strconv.Itoa(x.Rings), x.Wait, zeroLossRate(x.ZeroLoss), perRing,
			fmtRatio(float64(x.ZeroLoss.Rate), float64(one.ZeroLoss.Rate)),
			p50, p99, fmtRatio(x.AtOnce.worstP50(), one.AtOnce.worstP50()),
			turn, fmtRatio(x.InTurn.worstP50(), one.InTurn.worstP50()),
			cpuOf(c, "run 1"), cpuOf(c, "run 2"), cpuOf(c, "pinger", "echo")})
	}
	return t
}

func (r *Report) ringsPerRingTable() table {
	t := table{title: "rings: round trip of each ring (µs): at once, a record in flight on every ring; in turn, one in flight in all", header: []string{
		"rings", "wait", "ring", "samples", "at once p50", "p90", "p99", "p99.9", "max", "in turn p50", "p99"}}
	for _, x := range r.Rings {
		for i, p := range x.AtOnce.PerRing {
			var q Percentiles
			if i < len(x.InTurn.PerRing) {
				q = x.InTurn.PerRing[i]
			}
			t.rows = append(t.rows, []string{strconv.Itoa(x.Rings), x.Wait, strconv.Itoa(i + 1), fmtCount(uint64(max(p.Samples, 0))),
				fmtUS(p.P50), fmtUS(p.P90), fmtUS(p.P99), fmtUS(p.P999), fmtUS(p.Max), fmtUS(q.P50), fmtUS(q.P99)})
		}
	}
	return t
}

func (r *Report) ringsSweepTable() table {
	t := table{title: "rings: zero-loss sweep, all rings together (records/s; CPU in cores)", header: []string{
		"rings", "wait", "offered/s", "achieved/s", "lossless", "drained", "NAKs", "retransmitted", "gaps", "drops", "CPU run 1", "CPU run 2"}}
	yes := map[bool]string{true: "yes", false: "no"}
	for _, x := range r.Rings {
		for _, s := range x.Sweep {
			t.rows = append(t.rows, []string{strconv.Itoa(x.Rings), x.Wait, FormatSI(float64(s.Rate)), FormatSI(s.Achieved),
				yes[s.Lossless()], yes[s.Drained], fmtCount(s.NAKs), fmtCount(s.Retransmitted), fmtCount(s.Gaps), fmtCount(s.Drops),
				cpuOf(s.CPU, "run 1"), cpuOf(s.CPU, "run 2")})
		}
	}
	return t
}

// ringsFloorAlone finds the floor of one datagram alone.
func (r *Report) ringsFloorAlone() (RingsFloor, bool) {
	for _, x := range r.RingsFloor {
		if x.Datagrams == 1 {
			return x, true
		}
	}
	return RingsFloor{}, false
}

// ringsFloorTable sets each count's floor beside the rings' own ratio at
// that count: what n in flight at once cost each against one alone, with
// no ring and no ringfire, and with them, per wait mode.
func (r *Report) ringsFloorTable() table {
	t := table{title: "rings: the floor, N kernel UDP datagrams in flight at once between two processes over veth0, one thread each polling its N sockets, no ring (µs)",
		header: []string{"datagrams", "wait", "samples", "p50 µs", "p99 µs", "worst p50 ÷ 1 datagram", "rings at once worst p50 ÷ 1 ring",
			"CPU pinger+echo"}}
	one, _ := r.ringsFloorAlone()
	for _, x := range r.RingsFloor {
		p50, p99 := x.AtOnce.spread()
		var rings []string
		for _, y := range r.Rings {
			if y.Rings == x.Datagrams {
				alone, _ := r.ringsAlone(y.Wait)
				rings = append(rings, y.Wait+" "+fmtRatio(y.AtOnce.worstP50(), alone.AtOnce.worstP50()))
			}
		}
		ringsRatio := dash
		if len(rings) > 0 {
			ringsRatio = strings.Join(rings, ", ")
		}
		t.rows = append(t.rows, []string{strconv.Itoa(x.Datagrams), x.Wait, fmtCount(uint64(max(x.AtOnce.Lat.Samples, 0))), p50, p99,
			fmtRatio(x.AtOnce.worstP50(), one.AtOnce.worstP50()), ringsRatio, cpuOf(x.AtOnce.CPU, "pinger", "echo")})
	}
	return t
}
