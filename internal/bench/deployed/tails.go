package deployed

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// The tails are the samples slower than these percentiles of the round
// trip.
var tailsAbove = []struct {
	name string
	q    float64
}{{"p99", 0.99}, {"p99.9", 0.999}}

// tails says where the slowest round trips went. For each sample slower
// than a percentile of the round trip, the hop whose time exceeded that
// hop's own median by the most took the excess; with sched (nil: no
// scheduler trace), how the thread that ends that hop spent it: the hot
// thread of the process that took the hop's second stamp (the one the
// record waited for).
func (tr *traceRun) tails(sched *schedLog) []report.TailHop {
	n := len(tr.samples)
	if n == 0 {
		return nil
	}
	hops := len(tr.chain) - 1
	med := make([]int64, hops)
	for i := range med {
		d := make([]int64, n)
		for j, ts := range tr.samples {
			d[j] = ts[i+1] - ts[i]
		}
		slices.Sort(d)
		med[i] = d[n/2]
	}
	totals := make([]int64, n)
	for j, ts := range tr.samples {
		totals[j] = ts[hops] - ts[0]
	}
	sorted := slices.Clone(totals)
	slices.Sort(sorted)
	var out []report.TailHop
	for _, above := range tailsAbove {
		limit := sorted[max(int(math.Ceil(above.q*float64(n)))-1, 0)]
		out = append(out, tr.tail(above.name, limit, totals, med, sched)...)
	}
	return out
}

// tailAcc adds up one hop's share of a tail.
type tailAcc struct {
	excess                     []int64
	traced                     int
	run, wait, sleep, duration int64
}

// tail attributes the samples whose total exceeds limit.
func (tr *traceRun) tail(above string, limit int64, totals, med []int64, sched *schedLog) []report.TailHop {
	acc := make([]tailAcc, len(med))
	tail := 0
	for j, ts := range tr.samples {
		if totals[j] <= limit {
			continue
		}
		tail++
		k := 0
		for i := range med {
			if ts[i+1]-ts[i]-med[i] > ts[k+1]-ts[k]-med[k] {
				k = i
			}
		}
		a := &acc[k]
		a.excess = append(a.excess, ts[k+1]-ts[k]-med[k])
		if sched == nil {
			continue
		}
		if tid, ok := sched.hotThread(tr.pids[k+1]); ok {
			if run, wait, sleep, ok := sched.spent(tid, ts[k], ts[k+1]); ok {
				a.traced++
				a.run, a.wait, a.sleep = a.run+run, a.wait+wait, a.sleep+sleep
				a.duration += run + wait + sleep
			}
		}
	}
	var out []report.TailHop
	for k, a := range acc {
		if len(a.excess) == 0 {
			continue
		}
		slices.Sort(a.excess)
		h := report.TailHop{Above: above, Tail: tail, From: tr.chain[k].name, To: tr.chain[k+1].name, Samples: len(a.excess),
			ExcessP50: float64(a.excess[len(a.excess)/2]) / float64(time.Microsecond), Traced: a.traced}
		if a.duration > 0 {
			d := float64(a.duration)
			h.Running, h.Runnable, h.Sleeping = float64(a.run)/d, float64(a.wait)/d, float64(a.sleep)/d
		}
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(x, y report.TailHop) int { return cmp.Compare(y.Samples, x.Samples) })
	return out
}
