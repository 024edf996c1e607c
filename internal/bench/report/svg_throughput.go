package report

import "strings"

// Plot area of throughput.svg; transport names sit left of it.
const (
	tpLeft, tpRight = 150.0, 770.0
	tpTop, tpBottom = 60.0, 430.0
)

// bar is one horizontal bar of throughput.svg.
type bar struct {
	name   string
	value  float64
	label  string
	colour int
}

// barGroup is a titled set of bars sharing the x axis.
type barGroup struct {
	title string
	bars  []bar
}

// throughputGroups returns the zero-loss rates and, when the report has
// stress runs, each transport's highest achieved rate; zero and NaN
// values are left out.
func (r *Report) throughputGroups() []barGroup {
	colours := r.colours()
	zl := barGroup{title: "zero-loss rate"}
	for _, z := range r.ZeroLoss {
		if v := float64(z.Rate); valid(v) {
			zl.bars = append(zl.bars, bar{z.label(), v, zeroLossRate(z) + "/s", colours[z.Transport]})
		}
	}
	st := barGroup{title: "stress sweep: highest achieved rate"}
	at := map[string]int{}
	for _, s := range r.Stress {
		if !valid(s.Achieved) {
			continue
		}
		i, ok := at[s.Transport]
		if !ok {
			at[s.Transport] = len(st.bars)
			st.bars = append(st.bars, bar{name: s.Transport, colour: colours[s.Transport]})
			i = len(st.bars) - 1
		}
		if b := &st.bars[i]; s.Achieved > b.value {
			b.value, b.label = s.Achieved, FormatSI(s.Achieved)+"/s"
		}
	}
	var gs []barGroup
	for _, g := range []barGroup{zl, st} {
		if len(g.bars) > 0 {
			gs = append(gs, g)
		}
	}
	return gs
}

// throughputSVG charts records/s per transport as horizontal bars,
// grouped as throughputGroups returns them.
func (r *Report) throughputSVG() string {
	d := newSVG(r.chartTitle("Throughput"))
	d.text(tpLeft, tpTop-12, "start", "axis", "records/s, higher is better"+r.recordNote())
	gs := r.throughputGroups()
	rows, top := 0, 0.0
	for _, g := range gs {
		rows += len(g.bars) + 1
		for _, b := range g.bars {
			top = max(top, b.value)
		}
	}
	if rows == 0 {
		d.text((tpLeft+tpRight)/2, (tpTop+tpBottom)/2, "middle", "axis", "no throughput data")
		return d.String()
	}
	xmax := niceCeil(top * 1.2)
	rowH := min(34, (tpBottom-tpTop)/float64(rows))
	throughputAxis(d, xmax, tpTop+rowH*float64(rows)+4)
	y := tpTop
	for _, g := range gs {
		d.text(tpLeft, y+rowH*0.7, "start", "", g.title)
		y += rowH
		for _, b := range g.bars {
			drawBar(d, b, y, rowH, xmax)
			y += rowH
		}
	}
	return d.String()
}

// throughputAxis draws five vertical gridlines down to bottom, with
// rate labels under them.
func throughputAxis(d *svgDoc, xmax, bottom float64) {
	for i := 0; i <= 5; i++ {
		v := xmax * float64(i) / 5
		x := tpLeft + (tpRight-tpLeft)*float64(i)/5
		d.line(x, tpTop, x, bottom, "grid")
		d.text(x, bottom+18, "middle", "axis", fmtTick(v))
	}
}

// drawBar draws one bar in the row starting at y, its name to the left
// and its value label at its end.
func drawBar(d *svgDoc, b bar, y, rowH, xmax float64) {
	c, _ := colour(b.colour)
	h := rowH * 0.7
	w := (tpRight - tpLeft) * b.value / xmax
	mid := y + rowH/2
	d.raw(`<g class="bar" data-transport="%s">`+"\n", esc(b.name))
	d.text(tpLeft-8, mid+4, "end", "", b.name)
	d.raw(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
		tpLeft, mid-h/2, w, h, c, esc(b.name), esc(b.label))
	d.text(tpLeft+w+6, mid+4, "start", "", b.label)
	d.raw("</g>\n")
}

// fmtTick formats an axis value like FormatSI without trailing zeros:
// 0, 30 k, 1.5 M.
func fmtTick(v float64) string {
	if v == 0 {
		return "0"
	}
	num, unit, _ := strings.Cut(FormatSI(v), " ")
	if strings.Contains(num, ".") {
		num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
	}
	return strings.TrimSpace(num + " " + unit)
}
