package report

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// The charts WriteSVG writes, in order, and their alt texts.
const (
	latencySVG    = "latency.svg"
	throughputSVG = "throughput.svg"
	openLoopSVG   = "openloop.svg"
)

var svgAlt = map[string]string{
	latencySVG:    "ping-pong round-trip latency percentiles per transport",
	throughputSVG: "zero-loss records/s per transport",
	openLoopSVG:   "one-way latency p50, p99 and p99.9 against the offered rate, per wait",
}

// svgNames are the charts of r: latency.svg and throughput.svg, and
// openloop.svg when r has open-loop figures.
func (r *Report) svgNames() []string {
	names := []string{latencySVG, throughputSVG}
	if len(r.OpenLoop) > 0 {
		names = append(names, openLoopSVG)
	}
	return names
}

// Chart size in pixels.
const svgW, svgH = 800, 480

// palette holds distinct colours (Tableau 10), one per transport; past
// eight series they repeat with a dashed line.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
	"#9467bd", "#8c564b", "#e377c2", "#17becf"}

// WriteSVG writes latency.svg (ping-pong round-trip percentiles per
// transport, log scale), throughput.svg (zero-loss and stress maximum
// records/s per transport) and, when r has open-loop figures,
// openloop.svg (one-way percentiles against the offered rate) into dir,
// creating it if needed, and returns their paths.
func (r *Report) WriteSVG(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	charts := map[string]func() string{latencySVG: r.latencySVG, throughputSVG: r.throughputSVG, openLoopSVG: r.openLoopSVG}
	var paths []string
	for _, name := range r.svgNames() {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(charts[name]()), 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// colours assigns each transport a palette index, in order of first
// appearance, so that both charts use the same colour for it.
func (r *Report) colours() map[string]int {
	idx := map[string]int{}
	add := func(name string) {
		if _, ok := idx[name]; !ok {
			idx[name] = len(idx)
		}
	}
	for _, l := range r.PingPong {
		add(l.Name)
	}
	for _, z := range r.ZeroLoss {
		add(z.Transport)
	}
	for _, s := range r.Stress {
		add(s.Transport)
	}
	return idx
}

// colour returns the colour and dash pattern of palette index i.
func colour(i int) (fill, dasharray string) {
	if i >= len(palette) {
		dasharray = "6 3"
	}
	return palette[i%len(palette)], dasharray
}

// svgDoc accumulates one SVG document.
type svgDoc struct{ b strings.Builder }

// newSVG starts a document with a white background, the shared style
// and a centred title.
func newSVG(title string) *svgDoc {
	d := &svgDoc{}
	fmt.Fprintf(&d.b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">
<title>%s</title>
<style>
text { font-family: Helvetica, Arial, sans-serif; font-size: 13px; fill: #222; }
.title { font-weight: bold; }
.axis { font-size: 12px; fill: #555; }
.grid { stroke: #ddd; stroke-width: 1; }
.minor { stroke: #f0f0f0; stroke-width: 1; }
</style>
<rect width="100%%" height="100%%" fill="#fff"/>
`, svgW, svgH, svgW, svgH, esc(title))
	d.raw(`<text x="%d" y="28" text-anchor="middle" class="title" style="font-size: %.1fpx">%s</text>`+"\n",
		svgW/2, titleSize(title), esc(title))
	return d
}

// titleSize shrinks the title's font so that long titles fit the width.
func titleSize(title string) float64 {
	const size, fits = 17.0, 66
	n := utf8.RuneCountInString(title)
	if n <= fits {
		return size
	}
	return max(11, size*fits/float64(n))
}

// esc escapes s for XML text and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// text writes a text element anchored at (x, y).
func (d *svgDoc) text(x, y float64, anchor, class, s string) {
	fmt.Fprintf(&d.b, `<text x="%.1f" y="%.1f" text-anchor="%s"`, x, y, anchor)
	if class != "" {
		fmt.Fprintf(&d.b, ` class="%s"`, class)
	}
	fmt.Fprintf(&d.b, ">%s</text>\n", esc(s))
}

// line writes a line with a CSS class.
func (d *svgDoc) line(x1, y1, x2, y2 float64, class string) {
	fmt.Fprintf(&d.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="%s"/>`+"\n", x1, y1, x2, y2, class)
}

// raw writes formatted markup as is.
func (d *svgDoc) raw(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// String closes the document and returns it.
func (d *svgDoc) String() string { return d.b.String() + "</svg>\n" }

// logScale maps values to y pixels on a log10 axis spanning whole
// decades [10^lo, 10^hi] from bottom to top.
type logScale struct {
	lo, hi      int
	top, bottom float64
}

// newLogScale fits whole decades around the valid values in vs.
func newLogScale(vs []float64, top, bottom float64) logScale {
	s := logScale{lo: 0, hi: 3, top: top, bottom: bottom}
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if valid(v) {
			mn, mx = math.Min(mn, v), math.Max(mx, v)
		}
	}
	if !math.IsInf(mn, 1) {
		s.lo, s.hi = int(math.Floor(math.Log10(mn))), int(math.Ceil(math.Log10(mx)))
		if s.hi == s.lo {
			s.hi++
		}
	}
	return s
}

// y returns the pixel row of v, which must be valid.
func (s logScale) y(v float64) float64 {
	f := (math.Log10(v) - float64(s.lo)) / float64(s.hi-s.lo)
	return s.bottom - f*(s.bottom-s.top)
}

// decadeLabel names 10^e µs in a readable unit: 0.1 µs, 10 µs, 1 ms.
func decadeLabel(e int) string {
	switch {
	case e >= 6:
		return fmt.Sprintf("%g s", math.Pow10(e-6))
	case e >= 3:
		return fmt.Sprintf("%g ms", math.Pow10(e-3))
	}
	return fmt.Sprintf("%g µs", math.Pow10(e))
}

// niceCeil rounds v up to a round multiple of a power of ten (1, 1.5,
// 2, 2.5, 3, 4, 5, 6 or 8 times it).
func niceCeil(v float64) float64 {
	if !valid(v) {
		return 1
	}
	p := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}
