package replica

import (
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/replica/wire"
)

// statusWriteTimeout bounds one STATUS write; a source that does not read
// it for that long is dropped (the mirror reconnects).
const statusWriteTimeout = 5 * time.Second

// initTelemetry fills in the mirror's name and interval and derives its
// identity from the host and the ring's absolute path, so that a mirror
// restarted on the same ring (--from resume) keeps its row at the source.
func (m *Mirror) initTelemetry() {
	host, _ := os.Hostname()
	if m.cfg.Name == "" {
		m.cfg.Name = host + ":" + filepath.Base(m.cfg.Ring)
	}
	if m.cfg.StatusInterval <= 0 {
		m.cfg.StatusInterval = wire.DefaultStatusInterval
	}
	path, err := filepath.Abs(m.cfg.Ring)
	if err != nil {
		path = m.cfg.Ring
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	h.Write([]byte{0})
	h.Write([]byte(path))
	m.id = max(h.Sum64(), 1) // 0 means "no identity"
}

// ID is the identity the mirror reports to its source.
func (m *Mirror) ID() uint64 { return m.id }

// status is the mirror's STATUS now, with its lines' counters when the
// source told it line B's group (lines: it parses them; any other source
// gets the 96 bytes it knows).
func (m *Mirror) status(lines bool) wire.Status {
	st := &m.stats
	s := wire.Status{Applied: m.ring.published, Interval: m.cfg.StatusInterval, Lag: m.seq.lag(),
		Naks: st.NaksSent, Retransmitted: st.Retransmitted, Gaps: st.Gaps,
		Drops: st.Overflow + st.Malformed + st.OtherSession + st.FarAhead + st.Foreign, ID: m.id,
		Transport: st.Transport, Name: m.cfg.Name}
	if lines {
		s.HasLines, s.Lines = true, statusLines(&st.Lines)
	}
	return s
}

// reportStatus hands a STATUS to the connection's status writer when one
// is due: every StatusInterval, and early so that the source's
// AwaitApplied hears in about a round trip: once what a REPORT asked for
// is applied, or, for a source without the extension, whenever the mirror
// has just applied everything it heard of (at most every
// StatusInterval/20). It never
// blocks: a STATUS the writer has not taken yet is replaced by the newer
// one.
func (m *Mirror) reportStatus(c *conn, now time.Time) {
	if !c.telemetry || m.ring == nil || m.seq == nil {
		return
	}
	since := now.Sub(c.lastStatus)
	var early bool
	if c.reportOnAsk {
		early = c.asked != 0 && m.ring.published >= c.asked
	} else {
		early = m.ring.published != c.reported && m.seq.lag() == 0 && since >= m.cfg.StatusInterval/20
	}
	if since < m.cfg.StatusInterval && !early {
		return
	}
	if m.ring.published >= c.asked {
		c.asked = 0 // this STATUS answers the REPORT
	}
	c.lastStatus, c.reported = now, m.ring.published
	b := wire.AppendStatus((<-c.statusFree)[:0], m.status(c.hasLineB)) // never waits: see statusBufs
	select {
	case c.status <- b:
		c.statusRelay.Kick()
		return
	default:
	}
	select {
	case old := <-c.status: // the writer is behind: drop the older one
		c.statusFree <- old
	default: // the writer took it meanwhile
	}
	c.status <- b // the queue is empty: only the run loop sends
	c.statusRelay.Kick()
}

// statusBufs is how many STATUS buffers a connection has: the writer holds
// at most one and the queue one, so the run loop always finds one free.
const statusBufs = 3

// startStatus starts the goroutine writing STATUS frames: the relay's,
// parked in the netpoller until the run loop kicks it (reportStatus), so
// that the mirror's hot thread readies no goroutine itself (idle.Relay).
// Each frame is one Write call: the connection serializes them with the
// run loop's NAKs. A failed write closes the connection (a partial frame
// would corrupt the stream); the run loop then sees the error and
// reconnects.
func (c *conn) startStatus() error {
	c.status, c.statusFree = make(chan []byte, 1), make(chan []byte, statusBufs)
	for range statusBufs {
		c.statusFree <- make([]byte, 0, wire.HeaderSize+wire.StatusLinesSize) // the longest STATUS
	}
	r, err := idle.NewRelay(c.writeStatus)
	if err != nil {
		return err
	}
	c.statusRelay = r
	c.wg.Add(1)
	go func() { defer c.wg.Done(); r.Run(context.Background()) }() // ends when close closes r
	return nil
}

// writeStatus writes the queued STATUS, if one is (the relay's goroutine).
func (c *conn) writeStatus() {
	var b []byte
	select {
	case b = <-c.status:
	default:
		return
	}
	c.tcp.SetWriteDeadline(time.Now().Add(statusWriteTimeout))
	_, err := c.tcp.Write(b)
	c.statusFree <- b
	if err != nil {
		c.tcp.Close()
		c.statusRelay.Close()
	}
}
