package deployed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
)

// linesFwd is a forwarder process of a case.
type linesFwd struct {
	p    *proc.Proc
	line string
	log  string // the dropped frames' first sequences
}

// linesCase measures one case: its forwarders (none direct), run 1 and
// run 2, the open loop's producer and reader; a warm-up at lc.Rate, then
// lc.For timed; then the mirror's counters and the forwarders'.
func (b *Bench) linesCase(lc LinesConfig, c linesCase) (report.LinesCase, error) {
	res := report.LinesCase{Name: c.name, Lines: 1, Sent: 1, Direct: c.direct, DelayA: report.Duration(c.delayA),
		DelayB: report.Duration(c.delayB), LossA: c.lossA, LossB: c.lossB}
	if c.two {
		res.Lines, res.Sent = 2, 2
	}
	if c.oneA {
		res.Lines = 1
	}
	d, dir, err := b.deployedDir("lines-case-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var ps procSet
	defer func() { ps.stopRuns() }() // ps as it is at return
	a, bl := directLine(d, 0), directLine(d, 1)
	var fwds []linesFwd
	if !c.direct {
		ln, err := b.linesNet(d)
		if err != nil {
			return res, err
		}
		a, bl = viaLine(&ln.a), viaLine(&ln.b)
		vias := []*linesVia{&ln.a}
		if c.two {
			vias = append(vias, &ln.b)
		}
		for i, v := range vias {
			f, err := ps.forwarder(d, dir, v, lc, i, [2]time.Duration{c.delayA, c.delayB}[i], [2]float64{c.lossA, c.lossB}[i])
			if err != nil {
				return res, err
			}
			fwds = append(fwds, f)
		}
	}
	lh := newLinesHop(dir, "Y", lc.Transport, lc.Wait, a, bl, c.two)
	lh.oneA = c.oneA
	cfg := &b.cfg
	producer, err := ps.roleReady(d, d.n1, report.RoleProducer, role.Spec{Role: role.OpenProducer, Ring: lh.h.ring(0), Record: cfg.Record, Capacity: openCapacity})
	if err != nil {
		return res, err
	}
	_, run2, err := ps.startLinesRuns(d, dir, lh)
	if err != nil {
		return res, err
	}
	reader, err := ps.roleReady(d, d.n2, report.RoleReader, role.Spec{Role: role.OpenReader, Read: lh.h.copy(0), Wait: report.ModeOf(lc.Wait), Record: cfg.Record})
	if err != nil {
		return res, ps.explain(err)
	}
	ol := &openLoop{ps: &ps, producer: producer, reader: reader, next: 1}
	w, err := ol.step(lc.Rate, cfg.OpenWarmUp, role.FirstEchoWait)
	switch {
	case err != nil:
		return res, fmt.Errorf("warm-up: %w", err)
	case w.Received == 0:
		return res, fmt.Errorf("deployed: warm-up: %d records pushed, none read within %v", w.Pushed, 2*cfg.OpenWarmUp+role.FirstEchoWait)
	}
	if res.Step, err = ol.step(lc.Rate, lc.For, pace.DrainWait); err != nil {
		return res, err
	}
	if err := linesCounters(run2, lh, &res); err != nil {
		return res, err
	}
	return res, stopForwarders(fwds, &res)
}

// forwarder starts the forwarder of line v (index i: A 0, B 1) in its
// middle namespace and waits until it is ready.
func (ps *procSet) forwarder(d *deployedNet, dir string, v *linesVia, lc LinesConfig, i int, delay time.Duration, loss float64) (linesFwd, error) {
	f := linesFwd{line: v.name, log: filepath.Join(dir, "dropped-"+v.name)}
	spec := role.Spec{Role: role.Forwarder, Forward: &role.ForwardSpec{In: v.midIn, Out: v.midOut, Delay: report.Duration(delay),
		Loss: loss, Seed: lc.Seed + uint64(i), Port: uint16(linesPorts.udp + 2*i), Log: f.log, Realtime: true}}
	var err error
	f.p, err = ps.roleReady(d, v.launcher, "forwarder "+v.name, spec)
	return f, err
}

// linesCounters reads the mirror's repairs and per-line counters.
func linesCounters(run2 *ringsRun, lh linesHop, res *report.LinesCase) error {
	m, err := run2.scrape()
	if err != nil {
		return err
	}
	name := lh.h.copyName(0)
	naks, err1 := sumSeries(m, "ringfire_local_mirror_naks_total", []string{name})
	gaps, err2 := sumSeries(m, "ringfire_local_mirror_gap_records_total", []string{name})
	if err1 != nil || err2 != nil {
		return fmt.Errorf("deployed: run 2's counters: %v %v", err1, err2)
	}
	res.NAKs, res.Gaps = naks, gaps
	if !lh.two || lh.oneA {
		return nil
	}
	for _, line := range []string{report.LinesLineA, report.LinesLineB} {
		at := func(metric string) uint64 {
			return uint64(lineSeries(m, "ringfire_local_mirror_line_"+metric, name, line))
		}
		res.PerLine = append(res.PerLine, report.LineCounts{Line: line, Datagrams: at("datagrams_total"),
			First: at("first_total"), Late: at("late_total"), Lost: at("lost_total")})
	}
	return nil
}

// lineSeries is metric's value for ring and line, whichever order the
// labels come in (0 when absent).
func lineSeries(m map[string]float64, metric, ring, line string) float64 {
	if v, ok := m[fmt.Sprintf("%s{line=%q,ring=%q}", metric, line, ring)]; ok {
		return v
	}
	return m[fmt.Sprintf("%s{ring=%q,line=%q}", metric, ring, line)]
}

// stopForwarders stops each forwarder, reads its counters and dropped
// frames, and counts the frames every forwarder dropped.
func stopForwarders(fwds []linesFwd, res *report.LinesCase) error {
	var drops [][]uint64
	for _, f := range fwds {
		if err := f.p.Send(role.CmdStop); err != nil {
			return err
		}
		line, err := f.p.Expect(role.LineResult, readyWait)
		if err != nil {
			return err
		}
		var st role.ForwardResult
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			return fmt.Errorf("deployed: %s result %q: %w", f.p.Role(), line, err)
		}
		res.Forwarders = append(res.Forwarders, report.ForwardCounts{Line: f.line, Forward: st.Forward, Back: st.Back,
			Data: st.Data, DataDropped: st.DataDropped, Overflow: st.Overflow, MaxLate: report.Duration(st.MaxLateNs)})
		seqs, err := role.ReadSeqs(f.log)
		if err != nil {
			return err
		}
		drops = append(drops, seqs)
	}
	if len(drops) == 2 {
		res.LostBoth = bothDropped(drops[0], drops[1])
	}
	return nil
}

// bothDropped counts the sequences in both a and b.
func bothDropped(a, b []uint64) uint64 {
	in := make(map[uint64]bool, len(a))
	for _, s := range a {
		in[s] = true
	}
	var n uint64
	for _, s := range b {
		if in[s] {
			n++
			in[s] = false // a frame dropped twice on B (a resend) counts once
		}
	}
	return n
}
