package main

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ringfire/ringfire/replica"
)

// loopCollector exports a ringfire run process's Loops (its file's loop
// keys), labelled loop="0".."N-1": how many units each runs and how it
// turned and waited.
type loopCollector struct {
	loops   []*replica.Loop
	metrics []loopMetric
}

type loopMetric struct {
	d     *prometheus.Desc
	t     prometheus.ValueType
	value func(replica.LoopStats) float64
}

func newLoopCollector(loops []*replica.Loop) *loopCollector {
	c := &loopCollector{loops: loops}
	add := func(name, help string, t prometheus.ValueType, v func(replica.LoopStats) float64) {
		c.metrics = append(c.metrics, loopMetric{prometheus.NewDesc("ringfire_loop_"+name, help, []string{"loop"}, nil), t, v})
	}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	add("members", "Senders and mirror connections the loop runs now.", g, func(s replica.LoopStats) float64 { return float64(s.Members) })
	add("turns_total", "Turns: every member polled once.", k, func(s replica.LoopStats) float64 { return float64(s.Turns) })
	add("busy_turns_total", "Turns in which a member found work.", k, func(s replica.LoopStats) float64 { return float64(s.Busy) })
	add("yields_total", "sched_yield calls between fruitless turns.", k, func(s replica.LoopStats) float64 { return float64(s.Wait.Yields) })
	add("sleeps_total", "Sleeps (ppoll) after fruitless turns.", k, func(s replica.LoopStats) float64 { return float64(s.Wait.Sleeps) })
	return c
}

// Describe implements prometheus.Collector.
func (c *loopCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.d
	}
}

// Collect implements prometheus.Collector.
func (c *loopCollector) Collect(ch chan<- prometheus.Metric) {
	for i, l := range c.loops {
		st, label := l.Stats(), strconv.Itoa(i)
		for _, m := range c.metrics {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.value(st), label)
		}
	}
}
