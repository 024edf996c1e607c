package replica

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica/wire"
)

// A unicast mirror punches every punchEarly until a datagram arrives, then
// every punchEvery to keep its NAT mapping alive.
const (
	punchEarly = 50 * time.Millisecond
	punchEvery = time.Second
)

// Step handles what has arrived — at most stepLimit TCP frames and
// datagrams together — without blocking, sends a NAK if one is due and
// publishes the records written. It returns how many frames and datagrams
// it handled. A single-threaded caller interleaves Step with its own work;
// the mirror never waits for its local readers.
func (m *Mirror) Step() (int, error) {
	n, _, err := m.step(0)
	return n, err
}

// step is Step that, when nothing is queued, waits up to wait for the
// first datagram (for a transport that is not Pollable: a mirror without
// datagrams is always Pollable, and steps with 0). It also returns the
// time it read after its receives, which its caller goes on with.
func (m *Mirror) step(wait time.Duration) (n int, now time.Time, err error) {
	c := m.c
	if c == nil {
		return 0, now, fmt.Errorf("mirror: %w: not connected", ErrClosed)
	}
	defer func() {
		if err != nil {
			m.seq.confirmGap() // a backed GAP, and the records it held, are good
			m.ring.publish()   // what was stored before the error is good
		}
	}()
	n, err = m.drainTCP(c, stepLimit)
	if err != nil {
		return n, now, err
	}
	tcp := n
	if c.udp != nil {
		w := wait
		if n > 0 {
			w = 0
		}
		k, err := m.recvDatagrams(c, stepLimit-n, w)
		// A full batch may have left datagrams queued: a hole a heartbeat
		// shows may be among them (sequencer.wantNak waits for them, and
		// for those the transport holds back, Withholder).
		m.seq.queued = k == stepLimit-n
		n += k
		if err != nil {
			return n, now, err
		}
	}
	now = time.Now()
	if err := m.checkSource(c, tcp > 0, now); err != nil {
		return n, now, err
	}
	if err := m.finishStep(c, now); err != nil {
		return n, now, err
	}
	return n, now, nil
}

// checkSource ends a connection whose source has sent nothing over TCP
// for SourceTimeout (heard: this step handled a TCP frame), or has left
// a GAP past what it announced unbacked as long (sequencer.gapFrom). A
// real source's TCP session is never silent for more than 200 ms: it
// sends a HEARTBEAT after 200 ms without a frame, in every mode; only TCP
// counts, as datagrams can come from anyone on the segment.
func (m *Mirror) checkSource(c *conn, heard bool, now time.Time) error {
	wait := m.cfg.SourceTimeout
	if heard {
		c.heard = now
	} else if wait > 0 && now.Sub(c.heard) > wait {
		m.stats.SourceSilent++
		return fmt.Errorf("%w: nothing from %s for %v (SourceTimeout %v)",
			ErrSourceSilent, m.cfg.Source, now.Sub(c.heard).Round(time.Millisecond), wait)
	}
	if wait <= 0 {
		wait = DefaultSourceTimeout
	}
	return m.seq.pendingGapDue(now, wait)
}

func (m *Mirror) finishStep(c *conn, now time.Time) error {
	before := m.ring.published
	if err := m.ring.publish(); err != nil {
		return err
	}
	if m.ring.published != before {
		trace.Stamp(trace.Published, m.ring.published)
	}
	if first, last, ok := m.seq.wantNak(now); ok {
		m.nakBuf = wire.AppendNak(m.nakBuf[:0], first, last)
		c.tcp.SetWriteDeadline(now.Add(5 * time.Second))
		if _, err := c.tcp.Write(m.nakBuf); err != nil {
			return fmt.Errorf("mirror: send NAK: %w", err)
		}
	}
	interval := punchEvery
	if m.stats.Datagrams == 0 || m.lineBOwed(c) {
		interval = punchEarly // until the source answers (on each line)
	}
	if c.udp != nil && c.mc.Unicast() && now.Sub(m.lastPunch) >= interval {
		if err := m.punch(now); err != nil {
			return err
		}
	}
	if now.Sub(m.lastPublic) >= time.Millisecond {
		m.publishStats(now)
	}
	m.reportStatus(c, now)
	return nil
}

// drainTCP handles up to limit queued control frames.
func (m *Mirror) drainTCP(c *conn, limit int) (int, error) {
	if c.direct != nil {
		return m.drainDirect(c.direct, limit)
	}
	n := 0
	for n < limit {
		select {
		case f := <-c.frames:
			n++
			err := m.handleTCP(f.h, f.p)
			c.release(f.buf)
			if err != nil {
				return n, err
			}
		case err := <-c.errc:
			c.errc <- err // keep it for later calls
			if len(c.frames) == 0 {
				return n, err
			}
			// The reader queued these frames before it failed: they
			// come first (select picks a ready case at random).
		default:
			return n, nil
		}
	}
	return n, nil
}

// drainDirect handles up to limit control frames read from the socket.
func (m *Mirror) drainDirect(t *tcpReader, limit int) (int, error) {
	n := 0
	for n < limit {
		h, p, ok, err := t.next()
		if err != nil || !ok {
			return n, err
		}
		n++
		if err := m.handleTCP(h, p); err != nil {
			return n, err
		}
	}
	return n, nil
}

// handleTCP applies one control-connection frame.
func (m *Mirror) handleTCP(h wire.Header, p []byte) error {
	switch h.Kind {
	case wire.KindData:
		trace.Stamp(trace.Recv, h.Seq)
		if err := m.shape.CheckData(h, p); err != nil {
			return err
		}
		m.stats.Frames++
		m.stats.Bytes += uint64(len(p))
		return m.seq.data(h, p, true)
	case wire.KindGap:
		return m.seq.gapFrom(h.Seq)
	case wire.KindHeartbeat:
		m.seq.heartbeat(h.Seq)
		m.seq.suppressNaks = false // the TCP catch-up, if any, is over
		return nil
	case wire.KindReport:
		if m.c == nil || !m.c.reportOnAsk {
			break
		}
		seq, err := wire.ParseReport(h, p)
		m.c.asked = max(m.c.asked, seq)
		return err
	}
	return fmt.Errorf("%w: unexpected %v from the source", wire.ErrMalformed, h.Kind)
}

// recvDatagrams receives and applies up to limit datagrams.
func (m *Mirror) recvDatagrams(c *conn, limit int, wait time.Duration) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	ms := m.msgs[:limit]
	for i := range ms {
		ms[i].Buf = m.bufs[i]
	}
	k, err := c.udp.RecvBatch(ms, wait)
	if err != nil {
		return 0, fmt.Errorf("mirror: receive: %w", err)
	}
	for i := range k {
		if !m.fromSource(ms[i].Addr) {
			m.stats.Foreign++
			continue
		}
		b, ok := m.openDatagram(c, ms[i].Buf[:ms[i].N])
		if !ok {
			continue
		}
		if err := m.handleDatagram(b); err != nil {
			return k, err
		}
		// Readers get each datagram's records as soon as they are applied,
		// not when the batch is done (show does nothing if none were);
		// Published hears of the batch once, in finishStep's publish.
		if err := m.ring.show(); err != nil {
			return k, err
		}
		trace.Stamp(trace.Published, m.ring.published)
		if m.afterDatagram != nil {
			m.afterDatagram(i, dataLast(ms[i]), batchLast(ms[:k]))
		}
	}
	m.stats.Datagrams += uint64(k)
	return k, nil
}

// handleDatagram applies one datagram; bad ones are counted and dropped.
func (m *Mirror) handleDatagram(b []byte) error {
	h, err := wire.ParseHeader(b, len(b))
	if err != nil || int(h.Len) != len(b)-wire.HeaderSize {
		m.stats.Malformed++
		return nil
	}
	if h.Flags != m.c.mc.Session {
		m.stats.OtherSession++
		return nil
	}
	if m.farAhead(h.Seq) {
		m.stats.FarAhead++
		return nil
	}
	switch h.Kind {
	case wire.KindData:
		trace.Stamp(trace.Recv, h.Seq)
		p := b[wire.HeaderSize:]
		if m.shape.CheckData(h, p) != nil {
			m.stats.Malformed++
			return nil
		}
		m.stats.Frames++
		m.stats.Bytes += uint64(len(p))
		return m.seq.data(h, p, false)
	case wire.KindHeartbeat:
		m.seq.heartbeat(h.Seq)
		return nil
	}
	m.stats.Malformed++
	return nil
}

// dataLast is the last sequence a DATA datagram carries (0 for any other),
// and batchLast the last of a batch (for the afterDatagram test hook).
func dataLast(msg Message) uint64 {
	if h, err := wire.ParseHeader(msg.Buf[:msg.N], msg.N); err == nil && h.Kind == wire.KindData && h.Count > 0 {
		return h.Seq + uint64(h.Count) - 1
	}
	return 0
}

func batchLast(ms []Message) uint64 {
	var last uint64
	for _, msg := range ms {
		last = max(last, dataLast(msg))
	}
	return last
}

// farAhead reports whether a datagram's sequence lies more than the ring's
// capacity past the last record applied: the source cannot have sent it
// from a ring that holds capacity records (a forged datagram, or this
// mirror fell a whole ring behind, when TCP heartbeats lead it to the GAP).
// Such a datagram is neither held nor believed: one forged heartbeat at
// 2^62 would otherwise make the mirror NAK forever.
func (m *Mirror) farAhead(seq uint64) bool {
	return seq > m.seq.next-1+m.geom.Capacity
}

// fromSource reports whether a datagram comes from the source: for
// unicast, the address and port the mirror punches (the source's TCP
// address, its UDP port); for multicast, the source's TCP address (the
// group is open to anyone on the LAN). MirrorConfig.AnySource turns the
// check off, for a source whose datagrams leave by another address than
// the one its TCP connection reached.
func (m *Mirror) fromSource(from netip.AddrPort) bool {
	if m.cfg.AnySource {
		return true
	}
	src := m.c.spec.Source
	if m.c.mc.Unicast() {
		return from == src
	}
	return from.Addr().Unmap() == src.Addr()
}
