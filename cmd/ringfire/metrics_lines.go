package main

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/replica"
)

// lineMetrics are a local mirror's counters per line, for a mirror that
// takes two (mirror --iface-b): ringfire_local_mirror_line_*, labelled by
// ring and line (A, B); the same counters of a served ring's mirrors, as
// their STATUS reports them: ringfire_mirror_line_*, labelled as the
// mirror's series (mirrorLabels) and by line; and a served ring's own
// (serve --multicast-b). A mirror or source of one line exports none.
type lineMetrics struct {
	counters []lineMetric
	lateBy   *prometheus.Desc // labelled also by late_lt: the bucket's bound
	// remote and remoteLateBy are counters and lateBy for a served ring's
	// mirrors.
	remote       []lineMetric
	remoteLateBy *prometheus.Desc
	// sent and sendErrors are a served ring's per line (serve
	// --multicast-b): ringfire_serve_line_*.
	sent, sendErrors *prometheus.Desc
}

type lineMetric struct {
	d     *prometheus.Desc
	t     prometheus.ValueType
	value func(replica.LineStats) float64
}

func newLineMetrics() *lineMetrics {
	lm := new(lineMetrics)
	labels := []string{"ring", "line"}
	remote := append(slices.Clone(mirrorLabels), "line")
	add := func(name, help string, t prometheus.ValueType, v func(replica.LineStats) float64) {
		lm.counters = append(lm.counters, lineMetric{prometheus.NewDesc("ringfire_local_mirror_line_"+name, help, labels, nil), t, v})
		lm.remote = append(lm.remote, lineMetric{prometheus.NewDesc("ringfire_mirror_line_"+name, help+" As the mirror reports it.", remote, nil), t, v})
	}
	k := prometheus.CounterValue
	add("up", "1 while the line delivers; 0 once it went dark (nothing for 50 ms while the other line delivered).", prometheus.GaugeValue, func(s replica.LineStats) float64 {
		if s.Up {
			return 1
		}
		return 0
	})
	add("datagrams_total", "Datagrams received on the line.", k, func(s replica.LineStats) float64 { return float64(s.Received) })
	add("first_total", "DATA frames the line delivered before the other line.", k, func(s replica.LineStats) float64 { return float64(s.First) })
	add("late_total", "DATA frames the line delivered after the other line.", k, func(s replica.LineStats) float64 { return float64(s.Late) })
	add("lost_total", "DATA frames the other line delivered and this one did not.", k, func(s replica.LineStats) float64 { return float64(s.Lost) })
	add("downs_total", "Times the line went dark.", k, func(s replica.LineStats) float64 { return float64(s.Downs) })
	add("ups_total", "Times the line came back.", k, func(s replica.LineStats) float64 { return float64(s.Ups) })
	add("errors_total", "Failed receives on the line.", k, func(s replica.LineStats) float64 { return float64(s.Errors) })
	lm.lateBy = prometheus.NewDesc("ringfire_local_mirror_line_late_by_total",
		"DATA frames the line delivered after the other line, by how much later: late_lt is the bucket's upper bound in seconds (+Inf: later).",
		[]string{"ring", "line", "late_lt"}, nil)
	lm.remoteLateBy = prometheus.NewDesc("ringfire_mirror_line_late_by_total",
		"DATA frames the mirror's line delivered after its other line, by how much later, as the mirror reports it: late_lt is the bucket's upper bound in seconds (+Inf: later).",
		append(slices.Clone(remote), "late_lt"), nil)
	lm.sent = prometheus.NewDesc("ringfire_serve_line_datagrams_total", "Datagrams a source sending on two lines gave each line's transport.", labels, nil)
	lm.sendErrors = prometheus.NewDesc("ringfire_serve_line_errors_total", "Send calls a line failed (its link down...): the other line carried them.", labels, nil)
	return lm
}

// collectServe sends a served ring's line series, if it sends on two.
func (lm *lineMetrics) collectServe(ch chan<- prometheus.Metric, ring string, s *replica.Server) {
	st, ok := s.Lines()
	if !ok {
		return
	}
	for i := range st.Datagrams {
		line := string(rune('A' + i))
		ch <- prometheus.MustNewConstMetric(lm.sent, prometheus.CounterValue, float64(st.Datagrams[i]), ring, line)
		ch <- prometheus.MustNewConstMetric(lm.sendErrors, prometheus.CounterValue, float64(st.Errors[i]), ring, line)
	}
}

func (lm *lineMetrics) describe(ch chan<- *prometheus.Desc) {
	for _, m := range lm.counters {
		ch <- m.d
	}
	ch <- lm.lateBy
	for _, m := range lm.remote {
		ch <- m.d
	}
	ch <- lm.remoteLateBy
	ch <- lm.sent
	ch <- lm.sendErrors
}

// collect sends a mirror's line series, if it takes two lines.
func (lm *lineMetrics) collect(ch chan<- prometheus.Metric, ring string, st replica.MirrorStats) {
	emitLines(ch, lm.counters, lm.lateBy, st.Lines, ring)
}

// collectMirror sends a served ring's mirror's line series (labels: its
// mirrorLabels values), if it reported two lines.
func (lm *lineMetrics) collectMirror(ch chan<- prometheus.Metric, mi replica.MirrorInfo, labels ...string) {
	emitLines(ch, lm.remote, lm.remoteLateBy, mi.Lines, labels...)
}

// emitLines sends the series of two lines ls, each labelled by labels and
// its line; none if ls are not two lines (no name).
func emitLines(ch chan<- prometheus.Metric, ms []lineMetric, lateBy *prometheus.Desc, ls [2]replica.LineStats, labels ...string) {
	if ls[0].Name == "" {
		return
	}
	for i, l := range ls {
		lab := append(slices.Clone(labels), string(rune('A'+i)))
		for _, m := range ms {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.value(l), lab...)
		}
		for b, n := range l.LateBy {
			lt := "+Inf"
			if b < len(replica.LateBounds) {
				lt = strconv.FormatFloat(replica.LateBounds[b].Seconds(), 'g', -1, 64)
			}
			ch <- prometheus.MustNewConstMetric(lateBy, prometheus.CounterValue, float64(n), append(lab, lt)...)
		}
	}
}
