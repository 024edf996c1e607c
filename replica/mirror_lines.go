package replica

import (
	"fmt"
	"net/netip"

	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// lines reports whether the mirror announces HelloLines: it has a line B
// and takes datagrams (multicast, or unicast: then it punches on both
// lines).
func (m *Mirror) lines() bool {
	c := &m.cfg
	return (c.IfaceB.IsValid() || c.NewTransportB != nil) && !c.TCPOnly
}

// checkMirrorLines validates and completes the line B settings.
func checkMirrorLines(cfg *MirrorConfig) error {
	if cfg.IfaceB.IsValid() && !cfg.IfaceB.Is4() {
		return fmt.Errorf("%w: IfaceB %v is not an IPv4 address", ErrLines, cfg.IfaceB)
	}
	if !cfg.IfaceB.IsValid() && cfg.NewTransportB == nil {
		return nil
	}
	if cfg.NewTransportB == nil {
		cfg.NewTransportB = NewMirrorUDP
	}
	if cfg.LineWindow == 0 {
		cfg.LineWindow = DefaultLineWindow
	}
	return nil
}

// readLineB reads line B's MULTICAST frame after line A's, when GEOMETRY
// says one follows (GeometryLines): only to a mirror that announced
// HelloLines, after line A's; a group after a group, a unicast line B
// (its source address and punch key) after a unicast line A.
func (m *Mirror) readLineB(c *conn, h wire.Header, mc wire.Multicast) error {
	c.hasLineB = false
	if h.Flags&wire.GeometryLines == 0 {
		return nil
	}
	if !m.lines() || h.Flags&wire.GeometryMulticast == 0 {
		return fmt.Errorf("%w: GEOMETRY announces line B to a mirror that did not ask for it, or without a line A", wire.ErrMalformed)
	}
	mh, mp, err := c.readFrame(wire.MulticastSize)
	if err != nil {
		return err
	}
	if mh.Kind != wire.KindMulticast {
		return fmt.Errorf("%w: expected line B's MULTICAST, got %v", wire.ErrMalformed, mh.Kind)
	}
	b, err := wire.ParseMulticast(mp)
	if err != nil {
		return err
	}
	switch {
	case mc.Unicast() && !b.Unicast():
		return fmt.Errorf("%w: line B's MULTICAST is a group without a multicast line A", wire.ErrMalformed)
	case b.Session != mc.Session || b.MTU != mc.MTU:
		return fmt.Errorf("%w: line B's MULTICAST is not a group of line A's session and MTU", wire.ErrMalformed)
	case !mc.Unicast() && b.Unicast():
		return fmt.Errorf("%w: line B's MULTICAST is not a group of line A's session and MTU (unicast after a group)", wire.ErrMalformed)
	}
	if b, err = wire.ParseLineB(mh, mp); err != nil {
		return err
	}
	c.lineB, c.hasLineB = b, true
	return nil
}

// withLineB opens line B, when the source announced it, and returns the
// transport over both lines; t (line A) alone otherwise. It sets the
// sequencer's arbitration window.
func (m *Mirror) withLineB(c *conn, t Transport, spec DatagramSpec) (Transport, error) {
	m.seq.window = 0
	if !c.hasLineB {
		return t, nil
	}
	sb := spec
	sb.Iface = m.cfg.IfaceB
	if c.lineB.Unicast() {
		sb.Source = netip.AddrPortFrom(lineSource(c.lineB), c.lineB.Port) // where it punches
	} else {
		sb.Group = netip.AddrPortFrom(netip.AddrFrom4(c.lineB.Group), c.lineB.Port)
	}
	tb, err := m.cfg.NewTransportB(sb)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("line B datagram transport: %w", err)
	}
	m.seq.window = max(m.cfg.LineWindow, 0)
	return newLineRecv(t, tb, spec.Source, lineSource(c.lineB), &m.stats.Lines, m.lineEvent), nil
}

// lineEvent reports a line going dark or coming back.
func (m *Mirror) lineEvent(line int, up bool) {
	if m.cfg.Events == nil {
		return
	}
	k := MirrorLineDown
	if up {
		k = MirrorLineUp
	}
	m.cfg.Events(MirrorEvent{Kind: k, Source: m.cfg.Source, Line: string(rune('A' + line))})
}

// punchLineB sends a unicast line B's PUNCH, with its key (sealed under a
// key), from line B's address to the source's (lines_unicast.go).
func (m *Mirror) punchLineB(c *conn) error {
	l := linesOf(c.udp)
	if l == nil || !c.hasLineB || !c.lineB.Unicast() {
		return nil
	}
	var b [wire.HeaderSize + auth.Overhead]byte
	p := wire.AppendLinePunch(b[:0], c.mc.Session, c.lineB.Key)
	if c.punchSeal != nil {
		p = c.punchSeal.Seal(p)
	}
	to := netip.AddrPortFrom(lineSource(c.lineB), c.lineB.Port)
	if _, err := l.t[1].SendBatch([]Message{{Buf: p, Addr: to}}); err != nil {
		return fmt.Errorf("line B punch %v: %w", to, err)
	}
	return nil
}

// lineBOwed reports whether a unicast line B has delivered nothing yet:
// the mirror punches early on it (as on line A until its first datagram).
func (m *Mirror) lineBOwed(c *conn) bool {
	return c.hasLineB && c.lineB.Unicast() && m.stats.Lines[1].Received == 0
}

// linesOf is the two lines of a mirror's datagram transport (nil: one).
func linesOf(t Transport) *lineRecv {
	switch l := t.(type) {
	case *lineRecv:
		return l
	case lineRecvPoll:
		return l.lineRecv
	}
	return nil
}
