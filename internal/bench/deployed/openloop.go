package deployed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// The openloop section: one way at fixed offered rates, every endpoint a
// process of its own, over veth0 of the deployed topology.
//
//	N1: producer ── O01 ──▶ ringfire serve    ══veth0══▶ N2: ringfire mirror ── O01-mirror ──▶ reader
//	    (or one ringfire run per namespace, serving and mirroring O01, for a loop's wait)
//
// This process tells the producer to push a step's records (a count at
// a rate) and the reader which sequences to time, reads every process's
// CPU before and after, and turns their results into an OpenStep.

// openCapacity is the producer's ring, in records: the stress section's.
const openCapacity = 1 << 20

// portsO are the serve's TCP and UDP ports of a loop's run file.
var portsO = ringsPorts{8200, 8250}

// openBadP99 is the one-way p99 (µs) past which a step counts against
// the sweep, as a step with a record lapped or lost does.
const openBadP99 = 1e6

// openLoop is one wait's processes while its rates are swept.
type openLoop struct {
	ps               *procSet
	producer, reader *proc.Proc
	next             uint64 // the producer's next sequence
}

// OpenLoop measures the open loop over tr (a transport of Transports; a
// loop's wait unicast only) in wait at each of rates in turn, after a
// warm-up at the first, up to the second rate in a row with a one-way p99
// over 1 s or a record lapped or lost.
func (b *Bench) OpenLoop(tr, wait string, rates []int) (report.OpenLoop, error) {
	cfg := &b.cfg
	res := report.OpenLoop{Transport: tr, Wait: wait}
	if len(rates) == 0 {
		return res, fmt.Errorf("deployed: open loop: no rates")
	}
	d, dir, err := b.deployedDir("openloop-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var ps procSet
	defer func() { ps.stopRuns() }() // ps as it is at return
	ol := &openLoop{ps: &ps, next: 1}
	if ol.producer, ol.reader, err = ps.openProcs(d, dir, tr, wait, cfg.Record); err != nil {
		return res, err
	}
	w, err := ol.step(rates[0], cfg.OpenWarmUp, role.FirstEchoWait)
	switch {
	case err != nil:
		return res, fmt.Errorf("warm-up: %w", err)
	case w.Received == 0:
		return res, fmt.Errorf("deployed: warm-up: %d records pushed, none read within %v", w.Pushed, 2*cfg.OpenWarmUp+role.FirstEchoWait)
	}
	res.Steps, err = sweepOpen(rates, func(rate int) (report.OpenStep, error) { return ol.step(rate, cfg.OpenStep, pace.DrainWait) })
	return res, err
}

// sweepOpen runs step at each of rates in turn up to the second rate in
// a row that collapsed (a one-way p99 over 1 s, a record lapped or lost)
// or a step's error: the steps taken.
func sweepOpen(rates []int, step func(rate int) (report.OpenStep, error)) ([]report.OpenStep, error) {
	var steps []report.OpenStep
	bad := 0
	for _, rate := range rates {
		s, err := step(rate)
		if err != nil {
			return steps, err
		}
		steps = append(steps, s)
		if bad++; s.Lapped == 0 && s.Lost == 0 && s.Lat.P99 <= openBadP99 {
			bad = 0
		}
		if bad == 2 {
			break
		}
	}
	return steps, nil
}

// openProcs starts the producer (N1), ringfire serve (N1) and mirror (N2)
// of its ring, or for a loop's wait one ringfire run in each namespace,
// and the reader of the mirror ring (N2).
func (ps *procSet) openProcs(d *deployedNet, dir, tr, wait string, record int) (producer, reader *proc.Proc, err error) {
	p := d.pair
	h := ringsHop{prefix: "O", dir: dir, src: p.AAddr, dst: p.BAddr, ifname: p.AIf, ports: portsO, wait: wait, n: 1,
		udp: !strings.HasPrefix(tr, "xdp-")}
	producer, err = ps.roleReady(d, d.n1, report.RoleProducer, role.Spec{Role: role.OpenProducer, Ring: h.ring(0), Record: record, Capacity: openCapacity})
	if err != nil {
		return nil, nil, err
	}
	if _, _, loop := report.LoopWait(wait); loop {
		err = ps.openRuns(d, dir, h)
	} else {
		hp := hop{from: d.n1, to: d.n2, fromNS: p.A, src: p.AAddr, dst: p.BAddr, ifname: p.AIf, ring: h.ring(0), copy: h.copy(0)}
		if err = ps.serve(d, hp, tr, wait, report.RoleServe); err == nil {
			_, err = ps.start(hp.to, report.RoleMirror, mirrorArgs(d.ringfire, hp, tr, wait), nil, false)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	reader, err = ps.roleReady(d, d.n2, report.RoleReader, role.Spec{Role: role.OpenReader, Read: h.copy(0), Wait: report.ModeOf(wait), Record: record})
	if err != nil {
		return nil, nil, ps.explain(err)
	}
	return producer, reader, nil
}

// openRuns starts run 1 (N1, serving h) and run 2 (N2, mirroring it) and
// waits until both are ready.
func (ps *procSet) openRuns(d *deployedNet, dir string, h ringsHop) error {
	p := d.pair
	run1, err := ps.startRun(d, d.n1, p.A, report.RoleRun1, filepath.Join(dir, "open-1.toml"), metricsAt(p.AAddr), []ringsHop{h}, nil)
	if err != nil {
		return err
	}
	run2, err := ps.startRun(d, d.n2, p.B, report.RoleRun2, filepath.Join(dir, "open-2.toml"), metricsAt(p.BAddr), nil, []ringsHop{h})
	if err != nil {
		return err
	}
	for _, rr := range []*ringsRun{run1, run2} {
		if err := rr.ready(); err != nil {
			return ps.explain(err)
		}
	}
	return nil
}

// step pushes rate records/s for d (the count due in d, pushed within 2d)
// while the reader times them, and waits for the reader's result (bounded
// by the push's time and drain): the step, with every process's CPU over
// it.
func (ol *openLoop) step(rate int, d, drain time.Duration) (report.OpenStep, error) {
	count := max(1, uint64(float64(rate)*d.Seconds()))
	first := ol.next
	bound := 2*d + drain
	cpu0, err := ol.ps.cpuTimes()
	if err != nil {
		return report.OpenStep{}, err
	}
	start := time.Now()
	if err := ol.reader.Send(fmt.Sprintf("%s%d %d %d", role.CmdRead, first, first+count-1, bound)); err != nil {
		return report.OpenStep{}, err
	}
	if err := ol.producer.Send(fmt.Sprintf("%s%d %d %d", role.CmdPush, rate, 2*d, count)); err != nil {
		return report.OpenStep{}, err
	}
	var pushed role.ProducerResult
	if err := ol.result(ol.producer, 2*d+readyWait, &pushed); err != nil {
		return report.OpenStep{}, err
	}
	took := time.Since(start)
	var read role.ReaderResult
	if err := ol.result(ol.reader, bound+readyWait, &read); err != nil {
		return report.OpenStep{}, err
	}
	wall := time.Since(start)
	cpu1, err := ol.ps.cpuTimes()
	if err != nil {
		return report.OpenStep{}, err
	}
	ol.next = pushed.Last + 1
	s := report.OpenStep{Rate: rate, Duration: report.Duration(took), Pushed: pushed.Pushed, Received: read.Received,
		Lapped: read.Lapped, Lost: pushed.Pushed - min(pushed.Pushed, read.Received+read.Lapped), Lat: read.Lat, Wakes: pushed.Wakes,
		CPU: ol.ps.cpuOver(cpu0, cpu1, wall)}
	if read.SpanNs > 0 {
		s.Achieved = float64(read.Received) / time.Duration(read.SpanNs).Seconds()
	}
	return s, nil
}

// result waits (at most d) for p's result line and decodes it into v.
func (ol *openLoop) result(p *proc.Proc, d time.Duration, v any) error {
	line, err := p.Expect(role.LineResult, d)
	if err != nil {
		return ol.ps.explain(err)
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		return fmt.Errorf("deployed: %s result %q: %w", p.Role(), line, err)
	}
	return nil
}
