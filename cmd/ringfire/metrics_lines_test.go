package main

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/ringfire/ringfire/replica"
)

// lintedLines gathers c's series on a pedantic registry, fails on a
// promlint problem, and returns each series' value keyed by its name and
// the values of the labels named keep, in their order.
func lintedLines(t *testing.T, c prometheus.Collector, keep ...string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				if slices.Contains(keep, l.GetName()) {
					key += " " + l.GetValue()
				}
			}
			got[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return got
}

// wantSeries checks the series got holds want's values.
func wantSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (exported %v), want %v", k, g, ok, v)
		}
	}
}

// lineCollector exports one mirror's line series from fixed stats.
type lineCollector struct {
	lm *lineMetrics
	st replica.MirrorStats
}

func (c lineCollector) Describe(ch chan<- *prometheus.Desc) { c.lm.describe(ch) }
func (c lineCollector) Collect(ch chan<- prometheus.Metric) { c.lm.collect(ch, "r", c.st) }

// The line series of a mirror of two lines pass promlint, carry its
// counters, and a mirror of one line exports none.
func TestLineMetricsLint(t *testing.T) {
	var st replica.MirrorStats
	st.Lines[0] = replica.LineStats{Name: "udp", Up: true, Received: 7, First: 5, Late: 2, LateBy: [replica.LateBuckets]uint64{1, 1}}
	st.Lines[1] = replica.LineStats{Name: "xdp", Lost: 3, Downs: 1}
	got := lintedLines(t, lineCollector{newLineMetrics(), st}, "late_lt", "line")
	wantSeries(t, got, map[string]float64{
		"ringfire_local_mirror_line_lost_total B":           3,
		"ringfire_local_mirror_line_up A":                   1,
		"ringfire_local_mirror_line_up B":                   0,
		"ringfire_local_mirror_line_late_by_total 1e-05 A":  1,
		"ringfire_local_mirror_line_late_by_total 0.0001 A": 1,
		"ringfire_local_mirror_line_late_by_total +Inf A":   0,
		"ringfire_local_mirror_line_datagrams_total A":      7,
		"ringfire_local_mirror_line_downs_total B":          1,
	})
	one := prometheus.NewPedanticRegistry()
	one.MustRegister(lineCollector{newLineMetrics(), replica.MirrorStats{}})
	if mfs, err := one.Gather(); err != nil || len(mfs) != 0 {
		t.Fatalf("a mirror of one line exports %d families (%v), want none", len(mfs), err)
	}
}

// remoteLineCollector exports a served ring's mirror's line series from
// a fixed row.
type remoteLineCollector struct {
	lm *lineMetrics
	mi replica.MirrorInfo
}

func (c remoteLineCollector) Describe(ch chan<- *prometheus.Desc) { c.lm.describe(ch) }
func (c remoteLineCollector) Collect(ch chan<- prometheus.Metric) {
	c.lm.collectMirror(ch, c.mi, "r", "site-b", "00000000000000ff", "10.0.0.2:4000")
}

// A served ring's mirror of two lines exports its lines as it reported
// them, labelled as its other series and by line, promlint-clean; a
// mirror that reported none exports none.
func TestMirrorLineMetricsLint(t *testing.T) {
	var mi replica.MirrorInfo
	mi.Lines[0] = replica.LineStats{Name: "udp", Up: true, Received: 7, First: 5}
	mi.Lines[1] = replica.LineStats{Name: "xdp", Lost: 3, Downs: 1, LateBy: [replica.LateBuckets]uint64{0, 0, 0, 0, 2}}
	got := lintedLines(t, remoteLineCollector{newLineMetrics(), mi}, "late_lt", "line", "mirror")
	wantSeries(t, got, map[string]float64{
		"ringfire_mirror_line_up A site-b":                  1,
		"ringfire_mirror_line_up B site-b":                  0,
		"ringfire_mirror_line_first_total A site-b":         5,
		"ringfire_mirror_line_lost_total B site-b":          3,
		"ringfire_mirror_line_downs_total B site-b":         1,
		"ringfire_mirror_line_late_by_total +Inf B site-b":  2,
		"ringfire_mirror_line_late_by_total 1e-05 A site-b": 0,
	})
	one := prometheus.NewPedanticRegistry()
	one.MustRegister(remoteLineCollector{newLineMetrics(), replica.MirrorInfo{}})
	if mfs, err := one.Gather(); err != nil || len(mfs) != 0 {
		t.Fatalf("a mirror of one line exports %d families (%v), want none", len(mfs), err)
	}
}
