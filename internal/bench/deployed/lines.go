package deployed

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// The lines section: A/B lines, a source sending every datagram on two
// lines and a mirror taking the first copy of each, every endpoint a
// process of its own: run 1 (N1) serves, run 2 (N2) mirrors (one ringfire
// run each, for their /metrics), over the networks of lines_net.go.
//
//	zero-loss  this process writes the ring (the rings section's load and
//	           sweep) and run 2 mirrors it on one line, then on two,
//	           over direct links (veth0, veth1)
//	cases      the open loop's producer (N1) and reader (N2) time every
//	           record's one way at Rate: line A alone and both lines
//	           direct (the base of the forwarders' cost), then through
//	           the delay lines: line A alone, line A alone of a source
//	           sending on both (the delayed cases' base: the same load),
//	           both clean, B delayed, A delayed, both losing DATA frames

// LinesTransports are the transports of the section: line B is multicast.
var LinesTransports = []string{"xdp-multicast", "udp-multicast"}

// LinesConfig is the lines section's configuration.
type LinesConfig struct {
	Transport string        // both lines' (LinesTransports; default xdp-multicast)
	Wait      string        // run 1's and run 2's wait (default "default")
	Rate      int           // the cases' offered rate, records/s (default 20,000)
	For       time.Duration // each case's timed step (default 3 s)
	Delay     time.Duration // a delayed line's delay (default 200 µs)
	Loss      float64       // each lossy line's drop probability (default 0.1)
	Seed      uint64        // line A's drops' seed (line B's: Seed+1)
}

// The defaults of LinesConfig.
const (
	DefaultLinesRate  = 20_000
	DefaultLinesFor   = 3 * time.Second
	DefaultLinesDelay = 200 * time.Microsecond
	DefaultLinesLoss  = 0.1
)

// Defaults fills c's zero fields.
func (c *LinesConfig) Defaults() {
	if c.Transport == "" {
		c.Transport = LinesTransports[0]
	}
	if c.Wait == "" {
		c.Wait = "default"
	}
	if c.Rate <= 0 {
		c.Rate = DefaultLinesRate
	}
	if c.For <= 0 {
		c.For = DefaultLinesFor
	}
	if c.Delay <= 0 {
		c.Delay = DefaultLinesDelay
	}
	if c.Loss <= 0 {
		c.Loss = DefaultLinesLoss
	}
	if c.Seed == 0 {
		c.Seed = 41
	}
}

// linesCase is one case to measure.
type linesCase struct {
	name           string
	two, direct    bool
	oneA           bool // with two: the mirror takes line A only
	delayA, delayB time.Duration
	lossA, lossB   float64
}

// linesCases are the cases of lc, in order.
func linesCases(lc LinesConfig) []linesCase {
	return []linesCase{
		{name: report.LinesDirect, direct: true},
		{name: report.LinesDirect2, two: true, direct: true},
		{name: report.LinesA},
		{name: report.LinesAOfAB, two: true, oneA: true},
		{name: report.LinesAB, two: true},
		{name: report.LinesBSlow, two: true, delayB: lc.Delay},
		{name: report.LinesASlow, two: true, delayA: lc.Delay},
		{name: report.LinesLossy, two: true, lossA: lc.Loss, lossB: lc.Loss},
	}
}

// Lines measures the lines section: the two zero-loss sweeps, then every
// case. A step's error is kept and the next one measured; the result
// holds what was measured.
func (b *Bench) Lines() (report.Lines, error) {
	lc := b.cfg.Lines
	lc.Defaults()
	res := report.Lines{Transport: lc.Transport, Wait: lc.Wait, Rate: lc.Rate}
	var errs []error
	for _, two := range []bool{false, true} {
		s, err := b.linesZeroLoss(lc, two)
		if err != nil {
			errs = append(errs, fmt.Errorf("zero-loss, %d line(s): %w", s.Lines, err))
		}
		if two {
			res.TwoLines = s
		} else {
			res.OneLine = s
		}
	}
	for _, c := range linesCases(lc) {
		x, err := b.linesCase(lc, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			continue
		}
		res.Cases = append(res.Cases, x)
	}
	return res, errors.Join(errs...)
}

// linesZeroLoss sweeps one ring on one line, or two, over direct links.
func (b *Bench) linesZeroLoss(lc LinesConfig, two bool) (report.LinesSweep, error) {
	res := report.LinesSweep{Lines: 1}
	if two {
		res.Lines = 2
	}
	d, dir, err := b.deployedDir(fmt.Sprintf("lines-%d-", res.Lines))
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	lh := newLinesHop(dir, "W", lc.Transport, lc.Wait, directLine(d, 0), directLine(d, 1), two)
	ld, err := b.newRingsLoad(&b.cfg, lh.h)
	defer ld.close()
	if err != nil {
		return res, err
	}
	if ld.run1, ld.run2, err = ld.ps.startLinesRuns(d, dir, lh); err != nil {
		return res, err
	}
	res.Sweep, res.ZeroLoss, err = ld.sweep(&b.cfg, lc.Transport)
	return res, err
}

// directLine is line i over the deployed topology's veth i.
func directLine(d *deployedNet, i int) lineEnd {
	if i == 0 {
		return lineEnd{src: d.pair.AAddr, dst: d.pair.BAddr, srcIf: d.pair.AIf, dstIf: d.pair.BIf}
	}
	return lineEnd{src: d.back.AAddr, dst: d.back.BAddr, srcIf: d.back.AIf, dstIf: d.back.BIf}
}

// viaLine is a line through its middle namespace.
func viaLine(v *linesVia) lineEnd {
	return lineEnd{src: v.src, dst: v.dst, srcIf: v.srcIf, dstIf: v.dstIf}
}
