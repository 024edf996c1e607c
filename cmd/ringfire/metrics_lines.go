package main

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/replica"
)

// lineMetrics are a local mirror's counters per line, for a mirror that
// takes two (mirror --iface-b): ringfire_local_mirror_line_*, labelled by
// ring and line (A, B), and a served ring's (serve --multicast-b). A
// mirror or source of one line exports none.
type lineMetrics struct {
	counters []lineMetric
	lateBy   *prometheus.Desc // labelled also by late_lt: the bucket's bound
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
	add := func(name, help string, t prometheus.ValueType, v func(replica.LineStats) float64) {
		lm.counters = append(lm.counters, lineMetric{prometheus.NewDesc("ringfire_local_mirror_line_"+name, help, labels, nil), t, v})
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
	ch <- lm.sent
	ch <- lm.sendErrors
}

// collect sends a mirror's line series, if it takes two lines.
func (lm *lineMetrics) collect(ch chan<- prometheus.Metric, ring string, st replica.MirrorStats) {
	if st.Lines[0].Name == "" {
		return
	}
	for i, ls := range st.Lines {
		line := string(rune('A' + i))
		for _, m := range lm.counters {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.value(ls), ring, line)
		}
		for b, n := range ls.LateBy {
			lt := "+Inf"
			if b < len(replica.LateBounds) {
				lt = strconv.FormatFloat(replica.LateBounds[b].Seconds(), 'g', -1, 64)
			}
			ch <- prometheus.MustNewConstMetric(lm.lateBy, prometheus.CounterValue, float64(n), ring, line, lt)
		}
	}
}
