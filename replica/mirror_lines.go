package replica

import (
	"fmt"
	"net/netip"

	"github.com/ringfire/ringfire/replica/wire"
)

// lines reports whether the mirror announces HelloLines: it has a line B
// and takes multicast datagrams.
func (m *Mirror) lines() bool {
	c := &m.cfg
	return (c.IfaceB.IsValid() || c.NewTransportB != nil) && !c.TCPOnly && !c.Unicast
}

// checkMirrorLines validates and completes the line B settings.
func checkMirrorLines(cfg *MirrorConfig) error {
	if cfg.IfaceB.IsValid() && !cfg.IfaceB.Is4() {
		return fmt.Errorf("%w: IfaceB %v is not an IPv4 address", ErrLines, cfg.IfaceB)
	}
	if !cfg.IfaceB.IsValid() && cfg.NewTransportB == nil {
		return nil
	}
	if cfg.Unicast {
		return fmt.Errorf("%w: a second line is multicast only (Unicast set)", ErrLines)
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
// HelloLines, after a multicast line A.
func (m *Mirror) readLineB(c *conn, h wire.Header, mc wire.Multicast) error {
	c.hasLineB = false
	if h.Flags&wire.GeometryLines == 0 {
		return nil
	}
	if !m.lines() || h.Flags&wire.GeometryMulticast == 0 || mc.Unicast() {
		return fmt.Errorf("%w: GEOMETRY announces line B to a mirror that did not ask for it, or without a multicast line A", wire.ErrMalformed)
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
	if b.Unicast() || b.Session != mc.Session || b.MTU != mc.MTU {
		return fmt.Errorf("%w: line B's MULTICAST is not a group of line A's session and MTU", wire.ErrMalformed)
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
	sb.Group = netip.AddrPortFrom(netip.AddrFrom4(c.lineB.Group), c.lineB.Port)
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
