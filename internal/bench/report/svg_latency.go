package report

import (
	"fmt"
	"math"
	"strings"
)

// Plot area of latency.svg; the legend sits right of it.
const (
	latLeft, latRight = 80.0, 610.0
	latTop, latBottom = 70.0, 420.0
	legendX           = 630.0
)

// latencyPoints names the percentiles latency.svg plots, left to right.
var latencyPoints = []string{"p50", "p75", "p90", "p99", "p99.9", "p99.99", "max"}

// latencyValues returns p's figures in latencyPoints order.
func latencyValues(p Percentiles) []float64 {
	return []float64{p.P50, p.P75, p.P90, p.P99, p.P999, p.P9999, p.Max}
}

// latencySVG charts each transport's ping-pong round-trip percentiles
// on a log10 µs axis, one polyline with markers per transport.
func (r *Report) latencySVG() string {
	d := newSVG(r.chartTitle("Ping-pong round trip"))
	var all []float64
	for _, l := range r.PingPong {
		all = append(all, latencyValues(l.Lat)...)
	}
	s := newLogScale(all, latTop, latBottom)
	d.text(latLeft, latTop-14, "start", "axis", "round trip, µs (log scale)"+r.recordNote())
	latencyAxes(d, s)
	row, colours := 0, r.colours()
	for _, l := range r.PingPong {
		if latencySeries(d, s, l, colours[l.Name]) {
			legendEntry(d, row, l.Name, colours[l.Name])
			row++
		}
	}
	if row == 0 {
		d.text((latLeft+latRight)/2, (latTop+latBottom)/2, "middle", "axis", "no ping-pong data")
	}
	return d.String()
}

// latencyX returns the pixel column of percentile i.
func latencyX(i int) float64 {
	step := (latRight - latLeft) / float64(len(latencyPoints))
	return latLeft + (float64(i)+0.5)*step
}

// latencyAxes draws the grid (latencyGrid) and the percentile labels.
func latencyAxes(d *svgDoc, s logScale) {
	latencyGrid(d, s)
	for i, name := range latencyPoints {
		d.text(latencyX(i), latBottom+20, "middle", "axis", name)
	}
	d.text((latLeft+latRight)/2, latBottom+42, "middle", "axis", "percentile")
}

// latencyGrid draws the plot area's frame and a µs axis on scale s:
// decade gridlines with labels, minor gridlines at 2..9 times each decade.
func latencyGrid(d *svgDoc, s logScale) {
	logGrid(s.lo, s.hi, s.y, func(y float64, class string) { d.line(latLeft, y, latRight, y, class) },
		func(y, _ float64, e int) { d.text(latLeft-8, y+4, "end", "axis", decadeLabel(e)) })
	d.raw(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n",
		latLeft, latTop, latRight-latLeft, latBottom-latTop)
}

// logGrid draws the gridlines of a log10 axis of whole decades [10^lo,
// 10^hi], at maps a value to its pixel: each decade's (class grid,
// labelled) and, within it, 2..9 times it (class minor).
func logGrid(lo, hi int, at func(v float64) float64, line func(p float64, class string), label func(p, v float64, e int)) {
	for e := lo; e <= hi; e++ {
		if e < hi {
			for m := 2; m < 10; m++ {
				line(at(float64(m)*math.Pow10(e)), "minor")
			}
		}
		v := math.Pow10(e)
		line(at(v), "grid")
		label(at(v), v, e)
	}
}

// latencySeries draws one transport's line and markers, skipping
// missing values; it reports whether anything was drawn.
func latencySeries(d *svgDoc, s logScale, l Latency, ci int) bool {
	var pts []string
	var marks strings.Builder
	for i, v := range latencyValues(l.Lat) {
		if !valid(v) {
			continue
		}
		x, y := latencyX(i), s.y(v)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&marks, `<circle cx="%.1f" cy="%.1f" r="4"><title>%s %s: %s µs</title></circle>`+"\n",
			x, y, esc(l.Name), latencyPoints[i], fmtUS(v))
	}
	if len(pts) == 0 {
		return false
	}
	c, dash := colour(ci)
	d.raw(`<g class="series" data-transport="%s" fill="%s" stroke="%s">`+"\n", esc(l.Name), c, c)
	d.raw(`<polyline points="%s" fill="none" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), dashAttr(dash))
	d.raw("%s</g>\n", marks.String())
	return true
}

// legendEntry draws row n of the legend: a line swatch and the name.
func legendEntry(d *svgDoc, n int, name string, ci int) {
	c, dash := colour(ci)
	y := latTop + 10 + float64(n)*24
	d.raw(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n",
		legendX, y, legendX+24, y, c, dashAttr(dash))
	d.raw(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", legendX+12, y, c)
	d.text(legendX+32, y+4, "start", "", name)
}

// dashAttr returns a stroke-dasharray attribute, or nothing.
func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

// chartTitle appends the machine's CPU to what (no date: the charts
// belong to a page that carries none).
func (r *Report) chartTitle(what string) string {
	cpu := []rune(r.Machine.CPU)
	if len(cpu) == 0 {
		return what
	}
	if len(cpu) > 56 {
		cpu = append(cpu[:55], '…')
	}
	return what + " — " + string(cpu)
}

// recordNote describes the record size for a chart's subtitle.
func (r *Report) recordNote() string {
	if r.Record <= 0 {
		return ""
	}
	return fmt.Sprintf("; %d-byte records", r.Record)
}
