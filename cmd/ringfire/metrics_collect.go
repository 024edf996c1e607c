package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/replica"
)

// collector reads the units' counters and tables at scrape time: nothing
// is counted per record. Every series carries the ring's name (label
// ring): a served ring's counters, the table of its mirrors, and this
// process's own mirrors (ringfire_local_mirror_*) and recorders
// (ringfire_record_*).
type collector struct {
	set    *unitSet
	server []ringMetric[replica.ServerStats]
	mirror []mirrorMetric
	local  []ringMetric[replica.MirrorStats]
	record []ringMetric[archive.RecorderStats]
	info   *prometheus.Desc
	// serveInfo and localInfo carry what transport a served ring and a
	// local mirror use (value 1).
	serveInfo, localInfo *prometheus.Desc
	// refusals counts a served ring's refused connections by kind.
	refusals *prometheus.Desc
	// cuts counts a served ring's files cut under their mapping: it
	// outlives each server, so it is there while serve waits for a ring.
	cuts *prometheus.Desc
	// recordInfo carries a recorder's archive directory (value 1);
	// recordFailures counts its runs that failed, across restarts.
	recordInfo, recordFailures *prometheus.Desc
	// lines: a local mirror's counters per line (mirror --iface-b).
	lines *lineMetrics
}

// ringMetric is one series per ring, read from S, a unit's counters.
type ringMetric[S any] struct {
	d     *prometheus.Desc
	t     prometheus.ValueType
	value func(S) float64
}

// newRingMetric describes ringfire_NAME, labelled by ring.
func newRingMetric[S any](name, help string, t prometheus.ValueType, v func(S) float64) ringMetric[S] {
	return ringMetric[S]{prometheus.NewDesc("ringfire_"+name, help, ringLabels, nil), t, v}
}

// emit sends the ring's series of ms, read from st.
func emit[S any](ch chan<- prometheus.Metric, ms []ringMetric[S], st S, ring string) {
	for _, m := range ms {
		ch <- prometheus.MustNewConstMetric(m.d, m.t, m.value(st), ring)
	}
}

type mirrorMetric struct {
	d        *prometheus.Desc
	t        prometheus.ValueType
	reported bool // only for mirrors that sent a STATUS
	value    func(replica.MirrorInfo) float64
}

// mirrorLabels name a mirror of a served ring: the ring, the mirror's
// name and identity (from its STATUS, empty before) and its TCP address.
var mirrorLabels = []string{"ring", "mirror", "id", "addr"}

// ringLabels name a served ring or a local mirror by its ring's name.
var ringLabels = []string{"ring"}

func newCollector(set *unitSet) *collector {
	c := &collector{set: set}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	srv := func(name, help string, t prometheus.ValueType, v func(replica.ServerStats) float64) {
		c.server = append(c.server, newRingMetric(name, help, t, v))
	}
	srv("ring_write_seq", "The served ring's write_seq.", g, func(s replica.ServerStats) float64 { return float64(s.WriteSeq) })
	srv("serve_mirrors", "Mirrors connected now.", g, func(s replica.ServerStats) float64 { return float64(s.Mirrors) })
	srv("serve_last_sent_seq", "Last sequence sent as datagrams.", g, func(s replica.ServerStats) float64 { return float64(s.LastSent) })
	srv("serve_lag_records", "write_seq minus the last sequence sent as datagrams.", g, func(s replica.ServerStats) float64 { return float64(s.Lag) })
	srv("serve_repair_addresses", "Peer addresses (IPv6: /64s) with a repair budget bucket now.", g, func(s replica.ServerStats) float64 { return float64(s.Repair.Addresses) })
	for _, m := range []struct {
		name, help string
		v          func(replica.ServerStats) uint64
	}{
		{"frames", "DATA frames sent as datagrams.", func(s replica.ServerStats) uint64 { return s.Frames }},
		{"datagrams", "Datagrams sent (every destination and copy).", func(s replica.ServerStats) uint64 { return s.Datagrams }},
		{"records", "Records sent as datagrams.", func(s replica.ServerStats) uint64 { return s.Records }},
		{"tcp_frames", "DATA frames sent over TCP.", func(s replica.ServerStats) uint64 { return s.TCPFrames }},
		{"tcp_records", "Records sent over TCP.", func(s replica.ServerStats) uint64 { return s.TCPRecord }},
		{"send_calls", "Batch send calls.", func(s replica.ServerStats) uint64 { return s.Syscalls }},
		{"naks_answered", "NAK frames answered.", func(s replica.ServerStats) uint64 { return s.NaksAnswered }},
		{"retransmitted_records", "Records sent in answer to NAKs.", func(s replica.ServerStats) uint64 { return s.Retransmitted }},
		{"gaps", "GAP frames sent.", func(s replica.ServerStats) uint64 { return s.Gaps }},
		{"gap_records", "Records announced lost by GAP frames.", func(s replica.ServerStats) uint64 { return s.GapRecords }},
		{"heartbeats", "Heartbeats sent.", func(s replica.ServerStats) uint64 { return s.Heartbeats }},
		{"handoffs", "Rounds run by a hub's mirror handing records on (no sender wake-up).", func(s replica.ServerStats) uint64 { return s.Handoffs }},
		{"direct_sends", "Sends a hot thread made itself on a parked TCP stream writer's connection.", func(s replica.ServerStats) uint64 { return s.DirectSends }},
		{"session_kicks", "Wake-ups of the TCP session writers through the wake relay.", func(s replica.ServerStats) uint64 { return s.SessionKicks }},
		{"sender_waits", "Times the sender waited (for the ring, or asleep once handed its records).", func(s replica.ServerStats) uint64 { return s.SenderWaits }},
		{"sender_busy_yields", "Times the sender yielded its CPU after finding records for 20 µs without waiting.", func(s replica.ServerStats) uint64 { return s.SenderBusyYields }},
		{"sender_hot_waits", "Adaptive sender's waits begun hot (sending for at least an eighth of its time): it yielded up to 2 ms before sleeping.", func(s replica.ServerStats) uint64 { return s.SenderHotWaits }},
		{"handed_sleeps", "A hub's sender's sleeps once its records come by hand-off (it no longer watches the ring).", func(s replica.ServerStats) uint64 { return s.HandedSleeps }},
		{"handed_wakeups", "Sleeps of a hub's sender that a hand-off cut short (data brought the heartbeat nearer).", func(s replica.ServerStats) uint64 { return s.HandedWakeups }},
		{"refused_connections", "Connections closed for a protocol error.", func(s replica.ServerStats) uint64 { return s.BadFrames }},
		{"refused_punches", "PUNCH datagrams refused.", func(s replica.ServerStats) uint64 { return s.BadPunches }},
		{"refused_datagrams", "Other datagrams dropped.", func(s replica.ServerStats) uint64 { return s.BadDatagram }},
		{"repair_bytes", "Bytes of repair sent: DATA frames answering NAKs or catching up (--repair-rate).", func(s replica.ServerStats) uint64 { return s.Repair.Bytes }},
		{"repair_catchup_bytes", "Bytes of repair that were catch-up: records the ring (or archive) held when the session began.", func(s replica.ServerStats) uint64 { return s.Repair.CatchUpBytes }},
		{"repair_naks_deferred", "NAKs whose answer waited for the repair budget.", func(s replica.ServerStats) uint64 { return s.Repair.NaksDeferred }},
		{"repair_naks_deferred_by_address", "NAKs whose answer waited for their address's repair budget.", func(s replica.ServerStats) uint64 { return s.Repair.NaksDeferredByAddr }},
		{"repair_naks_refused", "NAKs left unanswered, in whole or in part, for the mirror's repeat: the repair budget could not pay within 100 ms.", func(s replica.ServerStats) uint64 { return s.Repair.NaksRefused }},
		{"repair_naks_refused_by_address", "NAKs left unanswered for their address's repair budget.", func(s replica.ServerStats) uint64 { return s.Repair.NaksRefusedByAddr }},
		{"repair_catchup_waits", "Waits of sessions' catch-up for the repair budget.", func(s replica.ServerStats) uint64 { return s.Repair.CatchUpWaits }},
		{"history_records", "Records sent from the archive (--archive): what the ring no longer held.", func(s replica.ServerStats) uint64 { return s.History.Records }},
		{"history_bytes", "Bytes of records sent from the archive.", func(s replica.ServerStats) uint64 { return s.History.Bytes }},
		{"history_reads", "Reads of the archive.", func(s replica.ServerStats) uint64 { return s.History.Reads }},
		{"history_errors", "Reads of the archive that failed (the mirror got a gap instead).", func(s replica.ServerStats) uint64 { return s.History.Errors }},
		{"repair_catchup_waits_by_address", "Waits of sessions' catch-up for their address's repair budget.", func(s replica.ServerStats) uint64 { return s.Repair.CatchUpWaitsByAddr }},
	} {
		srv("serve_"+m.name+"_total", m.help, k, func(s replica.ServerStats) float64 { return float64(m.v(s)) })
	}
	mir := func(name, help string, t prometheus.ValueType, reported bool, v func(replica.MirrorInfo) float64) {
		c.mirror = append(c.mirror, mirrorMetric{prometheus.NewDesc("ringfire_mirror_"+name, help, mirrorLabels, nil), t, reported, v})
	}
	b := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	mir("connected", "1 while the mirror is connected, 0 after it left.", g, false, func(m replica.MirrorInfo) float64 { return b(m.Connected) })
	mir("telemetry", "1 if the mirror reports STATUS.", g, false, func(m replica.MirrorInfo) float64 { return b(m.Telemetry) })
	mir("applied_seq", "Last sequence readable in the mirror ring.", g, true, func(m replica.MirrorInfo) float64 { return float64(m.Applied) })
	mir("lag_records", "The ring's write_seq minus the mirror's applied sequence, counted from where its connection started.", g, true, func(m replica.MirrorInfo) float64 { return float64(m.LagRecords) })
	mir("lag_seconds", "Age of the oldest record the mirror has not applied.", g, true, func(m replica.MirrorInfo) float64 { return m.Lag.Seconds() })
	mir("reported_lag_records", "Records behind the newest the mirror heard of, as it reports.", g, true, func(m replica.MirrorInfo) float64 { return float64(m.MirrorLag) })
	mir("lagging", "1 while the mirror's lag is past half the ring's capacity.", g, true, func(m replica.MirrorInfo) float64 { return b(m.Lagging) })
	mir("naks_total", "NAK frames the mirror sent.", k, true, func(m replica.MirrorInfo) float64 { return float64(m.Naks) })
	mir("retransmitted_records_total", "Records the mirror received in answer to NAKs.", k, true, func(m replica.MirrorInfo) float64 { return float64(m.Retransmitted) })
	mir("gap_records_total", "Records the mirror lost (GAP).", k, true, func(m replica.MirrorInfo) float64 { return float64(m.Gaps) })
	mir("drops_total", "Datagrams the mirror could not use.", k, true, func(m replica.MirrorInfo) float64 { return float64(m.Drops) })
	c.addLocal()
	c.lines = newLineMetrics()
	c.addRecord()
	c.serveInfo = prometheus.NewDesc("ringfire_serve_info", "A served ring's datagram transport (value 1).", []string{"ring", "transport"}, nil)
	c.localInfo = prometheus.NewDesc("ringfire_local_mirror_info", "A local mirror's source and transport (value 1).", []string{"ring", "source", "transport"}, nil)
	c.refusals = prometheus.NewDesc("ringfire_serve_refusals_total",
		"Connections refused, or dropped before they were live, for a limit, by kind (max_conns, max_conns_per_addr, max_pending_per_addr, evicted, handshake_timeout, socket).",
		[]string{"ring", "kind"}, nil)
	c.cuts = prometheus.NewDesc("ringfire_serve_ring_cuts_total",
		"Served ring files cut under their mapping (truncated by another process); serve then waits for a valid ring at the path.", ringLabels, nil)
	c.info = prometheus.NewDesc("ringfire_mirror_info", "A mirror's transport (value 1).", append(mirrorLabels, "transport"), nil)
	return c
}

// addLocal describes the process's own mirrors.
func (c *collector) addLocal() {
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	loc := func(name, help string, t prometheus.ValueType, v func(replica.MirrorStats) float64) {
		c.local = append(c.local, newRingMetric("local_mirror_"+name, help, t, v))
	}
	loc("next_seq", "Next sequence this mirror will write.", g, func(s replica.MirrorStats) float64 { return float64(s.Next) })
	loc("lag_records", "Records behind the newest sequence heard of.", g, func(s replica.MirrorStats) float64 { return float64(s.Lag) })
	loc("connects_total", "TCP connections made to the source.", k, func(s replica.MirrorStats) float64 { return float64(s.Connects) })
	loc("records_total", "Records written to the mirror ring.", k, func(s replica.MirrorStats) float64 { return float64(s.Records) })
	loc("datagrams_total", "Datagrams received.", k, func(s replica.MirrorStats) float64 { return float64(s.Datagrams) })
	loc("naks_total", "NAK frames sent.", k, func(s replica.MirrorStats) float64 { return float64(s.NaksSent) })
	loc("gap_records_total", "Records lost (GAP).", k, func(s replica.MirrorStats) float64 { return float64(s.Gaps) })
	loc("source_errors_total", "Connections ended for a protocol error of the source (malformed frame, non-canonical GEOMETRY, unbacked GAP).", k, func(s replica.MirrorStats) float64 { return float64(s.SourceErrors) })
	loc("history", "1 while the source serves this mirror what its ring lost from its archive (serve --archive).", g, func(s replica.MirrorStats) float64 {
		if s.History {
			return 1
		}
		return 0
	})
	loc("source_silent_total", "Connections ended because the source sent nothing for --source-timeout.", k, func(s replica.MirrorStats) float64 { return float64(s.SourceSilent) })
	loc("ring_cuts_total", "Sessions ended because the mirror ring's file was cut under its mapping; the next starts a fresh ring.", k, func(s replica.MirrorStats) float64 { return float64(s.RingCuts) })
	loc("wait_sleeps_total", "Sleeps (ppoll) of the mirror's loop after fruitless rounds.", k, func(s replica.MirrorStats) float64 { return float64(s.Wait.Sleeps) })
	loc("wait_hot_yields_total", "Adaptive yields past the yield phase because the mirror's loop was hot (it would have slept).", k, func(s replica.MirrorStats) float64 { return float64(s.Wait.HotYields) })
	loc("wait_pending_sleeps_total", "Sleeps of the mirror's loop that ran to their bound with a TCP frame queued (a lost wake-up). Should stay 0.", k, func(s replica.MirrorStats) float64 { return float64(s.Wait.PendingSleeps) })
	loc("dropped_total", "Datagrams dropped: malformed, other session, foreign, far ahead, bad tag, replayed.", k, func(s replica.MirrorStats) float64 {
		return float64(s.Malformed + s.OtherSession + s.Foreign + s.FarAhead + s.BadAuth + s.Replayed)
	})
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.server {
		ch <- m.d
	}
	for _, m := range c.mirror {
		ch <- m.d
	}
	for _, m := range c.local {
		ch <- m.d
	}
	ch <- c.info
	ch <- c.refusals
	ch <- c.cuts
	ch <- c.serveInfo
	ch <- c.localInfo
	c.describeRecord(ch)
	c.lines.describe(ch)
}

// Collect implements prometheus.Collector: one snapshot of the counters
// and one of the table per ring and scrape.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	serves, mirrors := c.set.snapshot()
	for _, u := range serves {
		ch <- prometheus.MustNewConstMetric(c.cuts, prometheus.CounterValue, float64(u.cuts.Load()), u.name)
		if s := u.live.p.Load(); s != nil {
			c.collectServer(ch, u.name, s)
		}
	}
	for _, u := range mirrors {
		st := u.m.Stats()
		emit(ch, c.local, st, u.name)
		ch <- prometheus.MustNewConstMetric(c.localInfo, prometheus.GaugeValue, 1, u.name, u.source, st.Transport)
		c.lines.collect(ch, u.name, st)
	}
	c.collectRecord(ch)
}

func (c *collector) collectServer(ch chan<- prometheus.Metric, ring string, s *replica.Server) {
	st := s.Stats()
	emit(ch, c.server, st, ring)
	ch <- prometheus.MustNewConstMetric(c.serveInfo, prometheus.GaugeValue, 1, ring, st.Transport)
	c.lines.collectServe(ch, ring, s)
	for _, k := range replica.RefusalKinds() {
		ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, float64(st.RefusedOf(k)), ring, k.String())
	}
	seen := map[[4]string]bool{}
	for _, mi := range s.Mirrors() {
		id := ""
		if mi.ID != 0 {
			id = fmt.Sprintf("%016x", mi.ID)
		}
		l := [4]string{ring, mi.Name, id, mi.Addr.String()}
		if seen[l] {
			continue // two rows may not share labels
		}
		seen[l] = true
		for _, m := range c.mirror {
			if m.reported && !mi.Reported {
				continue
			}
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.value(mi), l[:]...)
		}
		ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, append(l[:], mi.Transport)...)
		c.lines.collectMirror(ch, mi, l[:]...)
	}
}
