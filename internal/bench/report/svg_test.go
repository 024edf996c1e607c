package report

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgInfo is what the tests read back from a chart.
type svgInfo struct {
	series  []string       // data-transport of each <g class="series">
	circles map[string]int // markers per series
	bars    []string       // data-transport of each <g class="bar">
	textY   map[string]float64
}

// parseSVG decodes doc through the end, failing on malformed XML.
func parseSVG(t *testing.T, doc string) svgInfo {
	t.Helper()
	info := svgInfo{circles: map[string]int{}, textY: map[string]float64{}}
	dec := xml.NewDecoder(strings.NewReader(doc))
	var series string
	var textAt float64
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return info
		}
		if err != nil {
			t.Fatalf("malformed SVG: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			a := attrs(e)
			switch {
			case e.Name.Local == "g" && a["class"] == "series":
				series = a["data-transport"]
				info.series = append(info.series, series)
			case e.Name.Local == "g" && a["class"] == "bar":
				info.bars = append(info.bars, a["data-transport"])
			case e.Name.Local == "circle" && series != "":
				info.circles[series]++
			case e.Name.Local == "text":
				textAt, _ = strconv.ParseFloat(a["y"], 64)
			}
		case xml.EndElement:
			if e.Name.Local == "g" {
				series = ""
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(e)); s != "" {
				info.textY[s] = textAt
			}
		}
	}
}

// attrs maps an element's attribute names to values.
func attrs(e xml.StartElement) map[string]string {
	m := map[string]string{}
	for _, a := range e.Attr {
		m[a.Name.Local] = a.Value
	}
	return m
}

func TestWriteSVG(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "svg")
	paths, err := sampleReport().WriteSVG(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "latency.svg" || filepath.Base(paths[1]) != "throughput.svg" {
		t.Fatalf("paths %v", paths)
	}
	lat := parseSVG(t, readFile(t, paths[0]))
	want := []string{"tcp", "udp-multicast", "udp-unicast", "xdp-unicast", "xdp-multicast"}
	if strings.Join(lat.series, ",") != strings.Join(want, ",") {
		t.Errorf("latency series %q, want %q", lat.series, want)
	}
	for _, s := range want {
		if lat.circles[s] != len(latencyPoints) {
			t.Errorf("%s: %d markers, want %d", s, lat.circles[s], len(latencyPoints))
		}
	}
	y10, ok10 := lat.textY["10 µs"]
	y100, ok100 := lat.textY["100 µs"]
	if !ok10 || !ok100 || y10 <= y100 {
		t.Errorf("10 µs label at y=%v (%v), 100 µs at y=%v (%v): want 10 µs below", y10, ok10, y100, ok100)
	}
	if _, ok := lat.textY["Ping-pong round trip — AMD EPYC 7763 64-Core Processor"]; !ok {
		t.Errorf("latency title missing: %v", lat.textY)
	}
	tp := parseSVG(t, readFile(t, paths[1]))
	if len(tp.bars) != 12 || !slices.Contains(tp.bars, "xdp-unicast yield") || !slices.Contains(tp.bars, "xdp-unicast") {
		t.Errorf("throughput bars %q, want 7 zero-loss (a wait other than the default named) and 5 stress", tp.bars)
	}
	for _, label := range []string{"≥ 1.60 M/s", "200 k/s", "zero-loss rate", "stress sweep: highest achieved rate"} {
		if _, ok := tp.textY[label]; !ok {
			t.Errorf("throughput lacks %q", label)
		}
	}
}

func TestSVGSkipsMissing(t *testing.T) {
	r := sampleReport()
	r.PingPong[1].Lat.P9999 = math.NaN()
	r.PingPong[1].Lat.Max = 0
	r.PingPong[2].Lat = Percentiles{P50: math.NaN()}
	r.ZeroLoss[0].Rate = 0
	r.Stress = nil
	lat := parseSVG(t, r.latencySVG())
	if len(lat.series) != 4 || lat.circles["udp-multicast"] != len(latencyPoints)-2 {
		t.Errorf("series %q, markers %v", lat.series, lat.circles)
	}
	tp := parseSVG(t, r.throughputSVG())
	if len(tp.bars) != 6 {
		t.Errorf("bars %q, want the 6 zero-loss rates left", tp.bars)
	}
	for _, doc := range []string{r.latencySVG(), r.throughputSVG()} {
		if strings.Contains(doc, "NaN") || strings.Contains(doc, "Inf") {
			t.Errorf("NaN or Inf in SVG")
		}
	}
}

func TestSVGSeriesCounts(t *testing.T) {
	for n := 0; n <= 9; n++ {
		r := &Report{}
		for i := range n {
			name := "t" + strconv.Itoa(i)
			r.PingPong = append(r.PingPong, Latency{Name: name, Lat: pct(1000, 5*float64(i+1), 50, 900)})
			r.ZeroLoss = append(r.ZeroLoss, ZeroLoss{Transport: name, Rate: 100000 * (i + 1)})
		}
		lat := parseSVG(t, r.latencySVG())
		tp := parseSVG(t, r.throughputSVG())
		if len(lat.series) != n || len(tp.bars) != n {
			t.Errorf("%d transports: %d series, %d bars", n, len(lat.series), len(tp.bars))
		}
	}
}

func TestFmtTick(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 30000: "30 k", 1.5e6: "1.5 M", 2.25e6: "2.25 M", 600: "600"} {
		if got := fmtTick(v); got != want {
			t.Errorf("fmtTick(%v)=%q, want %q", v, got, want)
		}
	}
}

func TestLogScale(t *testing.T) {
	s := newLogScale([]float64{3, math.NaN(), 0, 450}, 50, 450)
	if s.lo != 0 || s.hi != 3 {
		t.Errorf("decades %d..%d, want 0..3", s.lo, s.hi)
	}
	if s.y(1) != 450 || s.y(1000) != 50 || s.y(10) <= s.y(100) {
		t.Errorf("y(1)=%v y(10)=%v y(100)=%v y(1000)=%v", s.y(1), s.y(10), s.y(100), s.y(1000))
	}
	if one := newLogScale([]float64{20, 30}, 0, 100); one.lo != 1 || one.hi != 2 {
		t.Errorf("single decade %d..%d", one.lo, one.hi)
	}
	for v, want := range map[float64]float64{0.7: 0.8, 1.3e6 * 1.2: 2e6, 2.1e5: 2.5e5, 4.1e6: 5e6, 5e6: 5e6, 9e6: 1e7} {
		if got := niceCeil(v); math.Abs(got-want) > 1e-6*want {
			t.Errorf("niceCeil(%v)=%v, want %v", v, got, want)
		}
	}
}

// readFile returns a file's contents.
func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
