package report

import (
	"fmt"
	"math"
	"strings"
)

// openloop.svg: the throughput-latency curve, one-way p50, p99 and p99.9
// against the offered rate, both axes log10, one colour per wait and one
// dash pattern per percentile, the knee's 1 ms drawn across. It shares
// latency.svg's plot area and legend column.

// openPoints are the percentiles openloop.svg draws, with their dash
// patterns.
var openPoints = []struct {
	name, dash string
	of         func(Percentiles) float64
}{
	{"p50", "", func(p Percentiles) float64 { return p.P50 }},
	{"p99", "7 4", func(p Percentiles) float64 { return p.P99 }},
	{"p99.9", "2 3", func(p Percentiles) float64 { return p.P999 }},
}

// rateScale maps offered rates to x pixels on a log10 axis of whole
// decades [10^lo, 10^hi].
type rateScale struct{ lo, hi int }

func newRateScale(ols []OpenLoop) rateScale {
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, o := range ols {
		for _, s := range o.Steps {
			if v := float64(s.Rate); valid(v) {
				mn, mx = math.Min(mn, v), math.Max(mx, v)
			}
		}
	}
	if math.IsInf(mn, 1) {
		return rateScale{3, 7}
	}
	s := rateScale{int(math.Floor(math.Log10(mn))), int(math.Ceil(math.Log10(mx)))}
	if s.hi == s.lo {
		s.hi++
	}
	return s
}

func (s rateScale) x(v float64) float64 {
	f := (math.Log10(v) - float64(s.lo)) / float64(s.hi-s.lo)
	return latLeft + f*(latRight-latLeft)
}

// openLoopSVG charts each wait's one-way percentiles against the offered
// rate.
func (r *Report) openLoopSVG() string {
	d := newSVG(r.chartTitle("Open loop: one way against the offered rate"))
	all := []float64{KneeP99}
	for _, o := range r.OpenLoop {
		for _, s := range o.Steps {
			for _, p := range openPoints {
				all = append(all, p.of(s.Lat))
			}
		}
	}
	ys, xs := newLogScale(all, latTop, latBottom), newRateScale(r.OpenLoop)
	d.text(latLeft, latTop-14, "start", "axis", "one way, producer's push to reader's read, µs (log scale)"+r.recordNote())
	latencyGrid(d, ys)
	rateAxis(d, xs)
	y := ys.y(KneeP99)
	d.raw(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-width="1" stroke-dasharray="3 3"/>`+"\n", latLeft, y, latRight, y)
	d.text(latRight-4, y-5, "end", "axis", "1 ms: the knee's bound")
	row := 0
	for i, o := range r.OpenLoop {
		drawn := false
		for _, p := range openPoints {
			drawn = openSeries(d, ys, xs, o, p.name, p.dash, p.of, i) || drawn
		}
		if drawn {
			legendEntry(d, row, o.label(), i)
			row++
		}
	}
	if row == 0 {
		d.text((latLeft+latRight)/2, (latTop+latBottom)/2, "middle", "axis", "no open-loop data")
		return d.String()
	}
	for k, p := range openPoints {
		ly := latTop + 10 + float64(row+1+k)*24
		d.raw(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-width="2"%s/>`+"\n", legendX, ly, legendX+24, ly, dashAttr(p.dash))
		d.text(legendX+32, ly+4, "start", "", p.name)
	}
	return d.String()
}

// label names o in the chart: its wait, and its transport unless it is
// the section's usual one (AF_XDP unicast).
func (o OpenLoop) label() string {
	if o.Transport == "xdp-unicast" {
		return o.Wait
	}
	return o.Wait + " " + o.Transport
}

// rateAxis draws decade gridlines of offered rate with labels, and
// minor ones at 2..9 times each decade.
func rateAxis(d *svgDoc, s rateScale) {
	logGrid(s.lo, s.hi, s.x, func(x float64, class string) { d.line(x, latTop, x, latBottom, class) },
		func(x, v float64, _ int) { d.text(x, latBottom+20, "middle", "axis", fmtTick(v)+"/s") })
	d.text((latLeft+latRight)/2, latBottom+42, "middle", "axis", "offered rate, records/s (log scale)")
}

// openSeries draws one percentile of one wait against the offered rate,
// skipping missing values; it reports whether anything was drawn.
func openSeries(d *svgDoc, ys logScale, xs rateScale, o OpenLoop, name, dash string, of func(Percentiles) float64, ci int) bool {
	var pts []string
	var marks strings.Builder
	for _, s := range o.Steps {
		v := of(s.Lat)
		if !valid(v) || !valid(float64(s.Rate)) {
			continue
		}
		x, y := xs.x(float64(s.Rate)), ys.y(v)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&marks, `<circle cx="%.1f" cy="%.1f" r="3"><title>%s at %s/s: %s %s µs</title></circle>`+"\n",
			x, y, esc(o.label()), FormatSI(float64(s.Rate)), name, fmtUS(v))
	}
	if len(pts) == 0 {
		return false
	}
	c, _ := colour(ci)
	d.raw(`<g class="series" data-transport="%s" fill="%s" stroke="%s">`+"\n", esc(o.label()+" "+name), c, c)
	d.raw(`<polyline points="%s" fill="none" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), dashAttr(dash))
	d.raw("%s</g>\n", marks.String())
	return true
}
