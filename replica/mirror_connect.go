package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// NewMirrorUDP is the default datagram transport of a mirror: kernel UDP
// bound to the group's port and joined to it, or to an ephemeral port for
// unicast.
func NewMirrorUDP(s DatagramSpec) (Transport, error) {
	cfg := UDPConfig{Iface: s.Iface, SocketBuffer: 4 << 20}
	if s.Group.IsValid() {
		cfg.Bind = netip.AddrPortFrom(netip.IPv4Unspecified(), s.Group.Port())
		cfg.Group = s.Group.Addr()
	} else if s.Iface.IsValid() {
		cfg.Bind = netip.AddrPortFrom(s.Iface, 0)
	}
	return NewUDP(cfg)
}

// helloStart is the HELLO sequence for the first (or a later) connection.
func (m *Mirror) helloStart() uint64 {
	if m.ring != nil {
		return max(m.seq.next, 1)
	}
	switch m.cfg.From.Mode {
	case FromOldest:
		return wire.StartOldest
	case FromSeq:
		return max(m.cfg.From.Seq, 1)
	case FromResume:
		if m.restarted {
			return wire.StartOldest
		}
		if w, err := shm.Open(m.cfg.Ring, shm.OpenOptions{}); err == nil {
			ws := w.WriteSeq()
			w.Close()
			if ws > 0 {
				return ws + 1
			}
		}
		return wire.StartOldest
	}
	return wire.StartNewest
}

// Connect dials the source, exchanges HELLO and GEOMETRY, prepares the
// mirror ring and the datagram transport.
func (m *Mirror) Connect(ctx context.Context) error {
	if m.c != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	network, addr := "tcp", m.cfg.Source
	if p, ok := UnixSocket(addr); ok {
		network, addr = "unix", p
	}
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return fmt.Errorf("mirror: connect %s: %w", m.cfg.Source, err)
	}
	c, err := m.shake(ctx, raw)
	if err != nil {
		if protocolErr(err) {
			m.stats.SourceErrors++
			m.publishStats(time.Now())
		}
		return err
	}
	maxLen := max(tcpFrameMax, m.shape.MaxRecord())
	if c.udp == nil {
		// Before the status writer starts: it writes on c.tcp.
		if d, rc := directReader(c.tcp, c.br, maxLen); d != nil { // nil for TLS
			c.direct, c.tcp = d, rc
		}
	}
	if c.telemetry {
		if err := c.startStatus(); err != nil {
			c.close()
			return fmt.Errorf("mirror: %w", err)
		}
	}
	m.c = c
	c.heard = time.Now()
	m.stats.Connects++
	m.watch(c)
	c.notify = m.notify
	if c.direct == nil {
		c.startReader(maxLen)
	}
	m.emit(MirrorConnected, nil, 0)
	return nil
}

// shake runs the TLS handshake (with a key) and the HELLO–GEOMETRY
// exchange on raw. ctx's deadline (DialTimeout) bounds every read and
// write; its end (Run's context: SIGTERM) interrupts them at once, not at
// the deadline, however little the source sends. raw is closed on error.
func (m *Mirror) shake(ctx context.Context, raw net.Conn) (*conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl) // before the AfterFunc, which must have the last word
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	tc, err := m.secure(ctx, raw)
	if err != nil {
		stop()
		raw.Close()
		return nil, fmt.Errorf("mirror: connect %s: %w", m.cfg.Source, ctxErr(ctx, err))
	}
	c := newConn(tc)
	err = m.handshake(c)
	if !stop() && err == nil {
		err = ctx.Err() // the AfterFunc ran: the connection's deadline is past
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("mirror: handshake with %s: %w", m.cfg.Source, ctxErr(ctx, err))
	}
	raw.SetDeadline(time.Time{})
	return c, nil
}

// ctxErr is the error of a connection step that failed: ctx's when it
// was cancelled (the step's own error is then only the past deadline the
// cancellation set).
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); errors.Is(cerr, context.Canceled) {
		return cerr
	}
	return err
}

func (m *Mirror) handshake(c *conn) error {
	flags := uint8(0)
	if !m.cfg.NoTelemetry {
		flags |= wire.HelloTelemetry | wire.HelloReportOnAsk
	}
	if m.cfg.Key != nil {
		flags |= wire.HelloKeyed
	} else if !m.cfg.NoSession64 {
		flags |= wire.HelloSession64
	}
	if !m.cfg.NoHistory {
		flags |= wire.HelloHistory
	}
	if m.lines() {
		flags |= wire.HelloLines
	}
	if !m.cfg.TCPOnly {
		flags |= wire.HelloUDP
		if m.cfg.Unicast {
			flags |= wire.HelloUnicast
		}
	}
	if _, err := c.tcp.Write(wire.AppendHello(nil, m.helloStart(), wire.Hello{Flags: flags})); err != nil {
		return err
	}
	h, p, err := c.readFrame(max(wire.GeometrySize, wire.MaxErrorLen))
	if err != nil {
		return err
	}
	if h.Kind == wire.KindError {
		return refusal(p)
	}
	if h.Kind != wire.KindGeometry {
		return fmt.Errorf("%w: expected GEOMETRY, got %v", wire.ErrMalformed, h.Kind)
	}
	g, err := wire.ParseGeometry(p)
	if err != nil {
		return err
	}
	var mc wire.Multicast
	if h.Flags&wire.GeometryMulticast != 0 {
		mh, mp, err := c.readFrame(wire.MulticastSize)
		if err != nil {
			return err
		}
		if mh.Kind != wire.KindMulticast {
			return fmt.Errorf("%w: expected MULTICAST, got %v", wire.ErrMalformed, mh.Kind)
		}
		if mc, err = wire.ParseMulticast(mp); err != nil {
			return err
		}
	}
	if err := m.readLineB(c, h, mc); err != nil {
		return err
	}
	sid, hasSID := uint64(mc.Session), h.Flags&wire.GeometryMulticast != 0
	if h.Flags&wire.GeometrySession64 != 0 {
		s, err := m.readSession(c)
		if err != nil {
			return err
		}
		sid, hasSID = s.ID, true
	} else if m.cfg.Key != nil {
		return fmt.Errorf("%w: a keyed source sent no SESSION", wire.ErrMalformed)
	}
	if err := m.prepareRing(g, h, sid, hasSID); err != nil {
		return err
	}
	m.stats.History = !m.cfg.NoHistory && h.Flags&wire.GeometryHistory != 0
	c.telemetry = !m.cfg.NoTelemetry && h.Flags&wire.GeometryTelemetry != 0
	c.reportOnAsk = c.telemetry && h.Flags&wire.GeometryReportOnAsk != 0
	if h.Flags&wire.GeometryMulticast != 0 {
		return m.openDatagrams(c, mc)
	}
	m.stats.Transport = "tcp"
	if _, local := c.tcp.RemoteAddr().(*net.UnixAddr); local {
		m.stats.Transport = "unix"
	}
	m.seq.tcpOnly = true
	return nil
}

// prepareRing keeps the current mirror ring when the source continues it,
// or starts a fresh one (RESET, another layout, a restarted source).
func (m *Mirror) prepareRing(g wire.Geometry, h wire.Header, sid uint64, hasSID bool) error {
	l, err := g.MirrorLayout()
	if err != nil {
		return err
	}
	restarted := m.hasSession && hasSID && sid != m.session
	if restarted && h.Flags&wire.GeometryReset == 0 && m.ring != nil {
		// The new source answered a resume of the old one's ring: its
		// records before h.Seq would never come. Start over with a fresh
		// ring, asking from the configured start.
		m.ring.close()
		m.ring, m.seq, m.hasSession, m.restarted = nil, nil, false, true
		return fmt.Errorf("the source restarted (session %#x, was %#x): reconnecting for a fresh ring", sid, m.session)
	}
	keep := h.Flags&wire.GeometryReset == 0 && !restarted
	if m.ring != nil && (!keep || m.ring.w.Ring().Layout() != l) {
		m.ring.close()
		m.ring = nil
	}
	if m.ring == nil && keep && m.cfg.From.Mode == FromResume && !m.restarted {
		if w, err := shm.OpenWriter(m.cfg.Ring); err == nil {
			if w.Ring().Layout() == l {
				m.ring = newMirrorRing(w, m.cfg.Published)
			} else {
				w.Close()
			}
		}
	}
	if m.ring == nil {
		w, err := shm.CreateLayout(m.cfg.Ring, l, shm.CreateOptions{Replace: true, MaxSize: m.cfg.MaxRingSize})
		if err != nil {
			return err
		}
		m.ring = newMirrorRing(w, m.cfg.Published)
		m.stats.Resets++
		m.seq = nil
		m.restarted = false
	}
	m.geom, m.shape = g, wire.ShapeOf(g)
	first := max(h.Seq, 1)
	if m.seq == nil {
		m.seq = newSequencer(m.shape, first, m.ring, &m.stats)
		m.seq.seen = first - 1 // GEOMETRY announces what comes from first on
		if last := m.ring.stored; last > 0 && first > last+1 {
			// A resumed ring: the source no longer held last+1..first-1,
			// as a reconnection's gap(first) below counts them.
			m.stats.Gaps += first - last - 1
		}
	} else {
		for _, f := range m.seq.held { // the new connection resends them
			m.seq.free = append(m.seq.free, f.buf)
		}
		m.seq.held = m.seq.held[:0]
		m.seq.nakOut = false
		m.seq.pendingGap, m.seq.pendingSince = 0, time.Time{} // the last connection's to back
		// What the last connection's heartbeats announced is not this one's
		// to believe (a forged one would outlive the reconnection).
		m.seq.hb, m.seq.seen = 0, m.seq.next-1
		if err := m.seq.gap(first); err != nil {
			return err
		}
	}
	if hasSID {
		m.session, m.hasSession = sid, true
	}
	return nil
}

// openDatagrams builds the datagram transport the source announced and,
// for unicast, punches to the source.
func (m *Mirror) openDatagrams(c *conn, mc wire.Multicast) error {
	ta, ok := c.tcp.RemoteAddr().(*net.TCPAddr)
	if !ok {
		// A source on a Unix socket has no address to take datagrams from.
		return fmt.Errorf("%w: datagrams offered over %s", wire.ErrMalformed, c.tcp.RemoteAddr().Network())
	}
	src := ta.AddrPort()
	spec := DatagramSpec{Iface: m.cfg.Iface, MTU: int(mc.MTU),
		Source: netip.AddrPortFrom(src.Addr().Unmap(), mc.Port)}
	if !mc.Unicast() {
		spec.Group = netip.AddrPortFrom(netip.AddrFrom4(mc.Group), mc.Port)
	}
	t, err := m.cfg.NewTransport(spec)
	if err != nil {
		return fmt.Errorf("datagram transport: %w", err)
	}
	if t, err = m.withLineB(c, t, spec); err != nil {
		return err
	}
	c.udp, c.mc, c.spec = t, mc, spec
	if p, ok := t.(Pollable); ok {
		p.OnArrival(m.notify)
	}
	m.stats.Transport = TransportName(t) + " multicast"
	// Until the source says the TCP catch-up is over (its first TCP
	// HEARTBEAT), holes are being filled over TCP: do not NAK them.
	m.seq.suppressNaks = true
	m.seq.withholder, _ = t.(Withholder)
	if mc.Unicast() {
		m.stats.Transport = TransportName(t) + " unicast"
		return m.punch(time.Now())
	}
	return nil
}

// punch sends a PUNCH to the source's UDP port (and keeps NAT state warm);
// with a unicast line B, line B's PUNCH too. A line whose PUNCH fails is
// counted (LineStats.Errors): the error is returned only when no line
// could punch.
func (m *Mirror) punch(now time.Time) error {
	c := m.c
	if c == nil {
		return nil
	}
	var b [wire.HeaderSize + auth.Overhead]byte
	wire.Header{Kind: wire.KindPunch, Flags: c.mc.Session, Seq: uint64(c.mc.Token)}.Put(b[:])
	p := b[:wire.HeaderSize]
	if c.punchSeal != nil {
		p = c.punchSeal.Seal(p)
	}
	msg := []Message{{Buf: p, Addr: c.spec.Source}}
	m.lastPunch = now
	_, err := c.udp.SendBatch(msg)
	if err != nil {
		err = fmt.Errorf("punch %v: %w", c.spec.Source, err)
	}
	if !c.hasLineB || !c.lineB.Unicast() {
		return err
	}
	errB := m.punchLineB(c)
	if err != nil {
		m.stats.Lines[0].Errors++
	}
	if errB != nil {
		m.stats.Lines[1].Errors++
	}
	if err != nil && errB != nil {
		return errors.Join(err, errB)
	}
	return nil
}
