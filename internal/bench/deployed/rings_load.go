package deployed

import (
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

// ringsLoadRecords is the records the zero-loss phase's rings hold in
// all: each of N rings holds the largest power of two at most 1/N of it,
// so that at a given aggregate rate a sender may fall behind by the same
// time whatever N (one ring alone holds what the stress section's does).
const ringsLoadRecords = 1 << 20

// ringsSettle bounds the wait, after a rate that lost, for the mirrors to
// catch up before the next rate.
const ringsSettle = 5 * time.Second

// ringsLoadCapacity is each ring's capacity with n rings.
func ringsLoadCapacity(n int) uint64 {
	return 1 << (bits.Len64(uint64(ringsLoadRecords/n)) - 1)
}

// ringsLoad is the zero-loss phase: this process writes the source rings,
// run 1 serves them, run 2 mirrors them.
type ringsLoad struct {
	b            *Bench
	h            ringsHop
	ws           []*shm.Writer
	copies       []*shm.Ring // the mirror rings, for their write_seq
	rec          []byte
	ps           procSet
	run1, run2   *ringsRun
	names, cname []string // the rings' and the mirror rings' names
}

// ringsZeroLoss finds the highest aggregate rate n rings carry with every
// record at every mirror, no gap and no NAK: the stress section's method
// (each rate of cfg.Rates for cfg.Stress, up to the second rate in a row
// that loses), the rate split evenly among the rings.
func (b *Bench) ringsZeroLoss(cfg *Config, d *deployedNet, dir string, n int, wait string) ([]report.RingsStep, report.ZeroLoss, error) {
	p := d.pair
	ld, err := b.newRingsLoad(cfg, ringsHop{prefix: "L", dir: dir, src: p.AAddr, dst: p.BAddr, ifname: p.AIf, ports: portsL, wait: wait, n: n})
	defer ld.close()
	if err != nil {
		return nil, report.ZeroLoss{}, err
	}
	if ld.run1, err = ld.ps.startRun(d, d.n1, p.A, "run 1", filepath.Join(dir, "load-1.toml"), metricsAt(p.AAddr), []ringsHop{ld.h}, nil); err != nil {
		return nil, report.ZeroLoss{}, err
	}
	if ld.run2, err = ld.ps.startRun(d, d.n2, p.B, "run 2", filepath.Join(dir, "load-2.toml"), metricsAt(p.BAddr), nil, []ringsHop{ld.h}); err != nil {
		return nil, report.ZeroLoss{}, err
	}
	for _, rr := range []*ringsRun{ld.run1, ld.run2} {
		if err := rr.ready(); err != nil {
			return nil, report.ZeroLoss{}, ld.ps.explain(err)
		}
	}
	return ld.sweep(cfg, RingsTransport)
}

// newRingsLoad creates h's rings (h.n of them, ringsLoadCapacity each),
// which this process writes; the caller starts ld's run processes and
// closes ld, also on error.
func (b *Bench) newRingsLoad(cfg *Config, h ringsHop) (*ringsLoad, error) {
	ld := &ringsLoad{b: b, rec: make([]byte, cfg.Record), h: h}
	for i := range h.n {
		w, err := shm.Create(h.ring(i), shm.RingConfig{PayloadSize: cfg.Record, Capacity: ringsLoadCapacity(h.n)}, shm.CreateOptions{Replace: true})
		if err != nil {
			return ld, err
		}
		ld.ws = append(ld.ws, w)
		ld.names, ld.cname = append(ld.names, h.name(i)), append(ld.cname, h.copyName(i))
	}
	return ld, nil
}

// sweep waits for the mirrors' first datagrams (run 1 and run 2 ready),
// then tries each rate of cfg.Rates for cfg.Stress, up to the second rate
// in a row that loses (pace.ZeroLoss): the steps and the best, over tr.
func (ld *ringsLoad) sweep(cfg *Config, tr string) ([]report.RingsStep, report.ZeroLoss, error) {
	if err := ld.live(); err != nil {
		return nil, report.ZeroLoss{}, ld.ps.explain(err)
	}
	var steps []report.RingsStep
	best, err := pace.ZeroLoss(tr, cfg.Rates, func(rate int) (float64, bool, error) {
		if len(steps) > 0 && !steps[len(steps)-1].Drained && pace.Until(ringsSettle, "the mirrors to catch up", ld.drained) != nil {
			return 0, false, pace.ErrSweepDone // still behind: a higher rate would measure the last one's backlog
		}
		s, err := ld.step(rate, cfg.Stress)
		if err != nil {
			return 0, false, ld.ps.explain(err)
		}
		steps = append(steps, s)
		return s.Achieved, s.Lossless(), nil
	})
	return steps, best, err
}

func (ld *ringsLoad) close() {
	ld.ps.stopRuns()
	for _, c := range ld.copies {
		c.Close()
	}
	for _, w := range ld.ws {
		w.Close()
	}
}

// push writes the next record of ring i, stamped now.
func (ld *ringsLoad) push(i int) error {
	w := ld.ws[i]
	synth.Fill(ld.rec, w.Next(), ld.b.stamp())
	_, err := w.Push(ld.rec)
	return err
}

// drained reports whether every mirror ring holds every record pushed.
func (ld *ringsLoad) drained() bool {
	for i, c := range ld.copies {
		if c.WriteSeq() < ld.ws[i].Next()-1 {
			return false
		}
	}
	return true
}

// live pushes a record on every ring every millisecond or so (bounded by
// readyWait) until every mirror has received datagrams, then waits for
// them to catch up: a unicast mirror has punched, and the records before
// that, which came over TCP, are not the first rate's.
func (ld *ringsLoad) live() error {
	for i := range ld.ws {
		c, err := shm.Open(ld.h.copy(i), shm.OpenOptions{}) // the mirror made it as it connected (/readyz)
		if err != nil {
			return err
		}
		ld.copies = append(ld.copies, c)
	}
	var err error // of a scrape or a push, which ends the wait
	waiting := len(ld.ws)
	if pace.Until(readyWait, "the mirrors' first datagrams", func() bool {
		var m map[string]float64
		if m, err = ld.run2.scrape(); err != nil {
			return true
		}
		waiting = 0
		for _, name := range ld.cname {
			if m[series("ringfire_local_mirror_datagrams_total", name)] == 0 {
				waiting++
			}
		}
		if waiting == 0 {
			return true
		}
		for i := range ld.ws {
			if err = ld.push(i); err != nil {
				return true
			}
		}
		return false
	}) != nil {
		return fmt.Errorf("deployed: %d of %d mirrors received no datagram within %v", waiting, len(ld.ws), readyWait)
	}
	if err != nil {
		return err
	}
	return pace.Until(readyWait, "the mirrors to catch up", ld.drained)
}

// ringsCounters are the repair counters of the phase, summed over the
// rings.
type ringsCounters struct{ naks, gaps, retransmitted, drops uint64 }

func (ld *ringsLoad) counters() (ringsCounters, error) {
	m2, err := ld.run2.scrape()
	if err != nil {
		return ringsCounters{}, err
	}
	m1, err := ld.run1.scrape()
	if err != nil {
		return ringsCounters{}, err
	}
	var c ringsCounters
	var errs [4]error
	c.naks, errs[0] = sumSeries(m2, "ringfire_local_mirror_naks_total", ld.cname)
	c.gaps, errs[1] = sumSeries(m2, "ringfire_local_mirror_gap_records_total", ld.cname)
	c.drops, errs[2] = sumSeries(m2, "ringfire_local_mirror_dropped_total", ld.cname)
	c.retransmitted, errs[3] = sumSeries(m1, "ringfire_serve_retransmitted_records_total", ld.names)
	return c, errors.Join(errs[:]...)
}

// step pushes at an aggregate rate for d, round robin over the rings
// without waiting for anything, then waits (at most pace.DrainWait) for every
// mirror to hold every record and reads the repair counters.
func (ld *ringsLoad) step(rate int, d time.Duration) (report.RingsStep, error) {
	before, err := ld.counters()
	if err != nil {
		return report.RingsStep{}, err
	}
	cpu0, err := ld.ps.cpuTimes()
	if err != nil {
		return report.RingsStep{}, err
	}
	n := len(ld.ws)
	start := time.Now()
	pushed, err := pace.Push(d, rate, func(k int) error { return ld.push(k % n) }, pace.Sleep)
	if err != nil {
		return report.RingsStep{}, err
	}
	drained := pace.Until(pace.DrainWait, "the mirrors", ld.drained) == nil
	done := time.Since(start)
	cpu1, err := ld.ps.cpuTimes()
	if err != nil {
		return report.RingsStep{}, err
	}
	after, err := ld.counters()
	if err != nil {
		return report.RingsStep{}, err
	}
	return report.RingsStep{Rate: rate, Pushed: uint64(pushed), Achieved: float64(pushed) / done.Seconds(), Drained: drained,
		NAKs: after.naks - before.naks, Gaps: after.gaps - before.gaps, Retransmitted: after.retransmitted - before.retransmitted,
		Drops: after.drops - before.drops, CPU: ld.ps.cpuOver(cpu0, cpu1, done)}, nil
}
