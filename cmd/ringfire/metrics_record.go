package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/supervisor"
)

// addRecord describes the recorders' series (ringfire_record_*): one per
// [[record]] unit, labelled by its ring's name, read from its Recorder's
// Stats at scrape time.
func (c *collector) addRecord() {
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	rec := func(name, help string, t prometheus.ValueType, v func(archive.RecorderStats) float64) {
		c.record = append(c.record, newRingMetric("record_"+name, help, t, v))
	}
	rec("epoch", "The archive's epoch being written (a new ring at the path begins the next).", g, func(s archive.RecorderStats) float64 { return float64(s.Epoch) })
	rec("next_seq", "Next sequence the recorder archives.", g, func(s archive.RecorderStats) float64 { return float64(s.Next) })
	rec("lag_records", "The ring's write_seq minus the last sequence archived.", g, func(s archive.RecorderStats) float64 { return float64(s.Lag) })
	rec("direct", "1 when the segment being written bypasses the page cache (O_DIRECT), 0 when it goes through it.", g, func(s archive.RecorderStats) float64 {
		if s.Writer.Direct {
			return 1
		}
		return 0
	})
	for _, m := range []struct {
		name, help string
		v          func(archive.RecorderStats) uint64
	}{
		{"records", "Records archived.", func(s archive.RecorderStats) uint64 { return s.Records }},
		{"gaps", "Gap entries archived: the recorder fell more than the ring behind.", func(s archive.RecorderStats) uint64 { return s.Gaps }},
		{"gap_records", "Sequences the gap entries cover (records the archive lost).", func(s archive.RecorderStats) uint64 { return s.GapRecords }},
		{"epochs", "Epochs begun (a new archive, a producer restart, a ring cut under the recorder).", func(s archive.RecorderStats) uint64 { return s.Epochs }},
		{"ring_replaced", "Rings replaced at the path (a producer restart) while recording.", func(s archive.RecorderStats) uint64 { return s.Replaced }},
		{"ring_cuts", "Ring files cut under the recorder's mapping.", func(s archive.RecorderStats) uint64 { return s.Cuts }},
		{"bytes", "Entry bytes written to the archive.", func(s archive.RecorderStats) uint64 { return s.Writer.Bytes }},
		{"flushes", "Writes of the recorder's buffer to the segment.", func(s archive.RecorderStats) uint64 { return s.Writer.Flushes }},
		{"syncs", "fdatasync calls (--sync).", func(s archive.RecorderStats) uint64 { return s.Writer.Syncs }},
		{"segments_sealed", "Segments sealed (indexed, compressed with --compress).", func(s archive.RecorderStats) uint64 { return s.Writer.Sealed }},
		{"segments_removed", "Sealed segments removed by --max-bytes and --max-age.", func(s archive.RecorderStats) uint64 { return s.Writer.Removed }},
		{"write_errors", "Writes that failed (a full disk): each stopped the recording.", func(s archive.RecorderStats) uint64 { return s.Writer.WriteErrors }},
		{"torn_bytes", "Bytes of a torn tail a crash left, cut as the archive opened.", func(s archive.RecorderStats) uint64 { return s.Writer.TornBytes }},
	} {
		rec(m.name+"_total", m.help, k, func(s archive.RecorderStats) float64 { return float64(m.v(s)) })
	}
	c.recordFailures = prometheus.NewDesc("ringfire_record_failures_total",
		"Times recording stopped on an error: the archive could not be opened or written (a full disk); ringfire run retries after its back-off.", ringLabels, nil)
	c.recordInfo = prometheus.NewDesc("ringfire_record_info", "A recorder's archive directory (value 1).", []string{"ring", "dir"}, nil)
}

// describeRecord sends the recorders' descriptions.
func (c *collector) describeRecord(ch chan<- *prometheus.Desc) {
	for _, m := range c.record {
		ch <- m.d
	}
	ch <- c.recordInfo
	ch <- c.recordFailures
}

// collectRecord sends each recorder's series. Under ringfire run, a
// [[record]] unit waiting out its back-off after a failure has only its
// failure count (the supervisor's: it outlives each run).
func (c *collector) collectRecord(ch chan<- prometheus.Metric) {
	failures := func(name string, n uint64) {
		ch <- prometheus.MustNewConstMetric(c.recordFailures, prometheus.CounterValue, float64(n), name)
	}
	if c.set.sup != nil {
		for _, st := range c.set.sup.Snapshot() {
			if st.Table.Kind != supervisor.Record {
				continue
			}
			failures(st.Table.Name, uint64(st.Failures))
			if u, ok := st.Unit.(supervisedRecord); ok {
				c.emitRecord(ch, u.u)
			}
		}
		return
	}
	for _, u := range c.set.recorders() {
		c.emitRecord(ch, u)
		failures(u.name, u.failures.Load())
	}
}

func (c *collector) emitRecord(ch chan<- prometheus.Metric, u *recordUnit) {
	emit(ch, c.record, u.stats(), u.name)
	ch <- prometheus.MustNewConstMetric(c.recordInfo, prometheus.GaugeValue, 1, u.name, u.dir)
}
