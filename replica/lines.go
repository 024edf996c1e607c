package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
	"golang.org/x/sys/unix"
)

// Two lines (A/B feeds): a source sends every datagram on two transports,
// each with its own interface and multicast group (line A is
// ServerConfig.Multicast and Iface, line B MulticastB and IfaceB), or to
// a unicast mirror's two addresses (lines_unicast.go); a
// mirror that announced HelloLines is told line B's group in a second
// MULTICAST frame (GeometryLines), receives both (lines_recv.go) and
// applies the first copy of each frame: a lost datagram, link or switch on
// one line costs nothing while the other delivers. A mirror that does not
// announce HelloLines is served exactly as before, on line A.

// lineSender is a source's datagram transport over two lines: every
// datagram SendBatch sends to line A's group goes to line B's group too,
// and every one to a unicast mirror's line A address to its line B
// address (lines_unicast.go), through line B's transport. SendBatch is
// called by one goroutine at a time (the sender's round, under its lock),
// like any sender's transport.
type lineSender struct {
	a, b           Transport
	groupA, groupB netip.AddrPort // both invalid: no group line B
	uni            *lineUni       // nil: no unicast line B
	msgs           []Message      // line B's batch, reused
	turn           int            // the line recvPunches waits on next
	// sent and errs count per line the datagrams its transport took and
	// the batches it failed (Server.Lines).
	sent, errs [2]atomic.Uint64
}

// LineSendStats counts what a source sent on each of its two lines.
type LineSendStats struct {
	Name      [2]string // each line's transport ("udp", "xdp", "afpacket")
	Datagrams [2]uint64 // datagrams each line's transport took
	Errors    [2]uint64 // send calls a line failed (not a full ring): the other line carried them
	// BadPunches counts the datagrams a unicast line B refused: line B
	// PUNCHes without the key of a live session, forged or replayed
	// ones, anything else (also counted in ServerStats.BadPunches).
	BadPunches uint64
}

// Lines returns the counters of a source that sends on two lines
// (ServerConfig.MulticastB), and false for a source of one line.
func (s *Server) Lines() (LineSendStats, bool) {
	l, ok := s.udp.(*lineSender)
	if !ok {
		return LineSendStats{}, false
	}
	var st LineSendStats
	for i, t := range [2]Transport{l.a, l.b} {
		st.Name[i] = TransportName(t)
		st.Datagrams[i], st.Errors[i] = l.sent[i].Load(), l.errs[i].Load()
	}
	if l.uni != nil {
		st.BadPunches = l.uni.bad.Load()
	}
	return st, true
}

// SendBatch sends ms on line A, then on line B every datagram of ms to
// line A's group (to line B's) or to a unicast mirror that punched on
// both lines (to its line B address), whatever line A did: the lines
// lose independently. A line A that fails (a send error, or a full ring)
// while line B sent the whole batch counts as sent; line A's datagram
// too large for the MTU (EMSGSIZE) is returned, so that the sender
// shrinks its frames for both. Send errors are counted per line
// (Server.Lines).
func (l *lineSender) SendBatch(ms []Message) (int, error) {
	n, err := l.a.SendBatch(ms)
	l.sent[0].Add(uint64(n))
	if err != nil && !errors.Is(err, ErrWouldBlock) && !errors.Is(err, ErrClosed) {
		l.errs[0].Add(1)
	}
	l.msgs = l.msgs[:0]
	var routes map[netip.AddrPort]netip.AddrPort
	if l.uni != nil {
		routes = *l.uni.routes.Load()
	}
	for _, m := range ms {
		if m.Addr == l.groupA && l.groupB.IsValid() {
			m.Addr = l.groupB
			l.msgs = append(l.msgs, m)
		} else if len(routes) != 0 {
			if b, ok := routes[m.Addr]; ok {
				m.Addr = b
				l.msgs = append(l.msgs, m)
			}
		}
	}
	if len(l.msgs) == 0 {
		return n, err
	}
	nb, errB := l.b.SendBatch(l.msgs)
	l.sent[1].Add(uint64(nb))
	if errB != nil && !errors.Is(errB, ErrWouldBlock) && !errors.Is(errB, ErrClosed) {
		l.errs[1].Add(1)
	}
	carried := errB == nil && nb == len(ms) // every datagram had its copy
	if err != nil && carried && !errors.Is(err, unix.EMSGSIZE) && !errors.Is(err, ErrClosed) {
		return len(ms), nil
	}
	return n, err
}

// RecvBatch receives on line A (punchLoop receives on both lines with
// recvPunches).
func (l *lineSender) RecvBatch(ms []Message, wait time.Duration) (int, error) {
	return l.a.RecvBatch(ms, wait)
}

// LocalAddr is line A's.
func (l *lineSender) LocalAddr() netip.AddrPort { return l.a.LocalAddr() }

// Name names both lines' transports, "A+B".
func (l *lineSender) Name() string { return TransportName(l.a) + "+" + TransportName(l.b) }

// Close closes both lines.
func (l *lineSender) Close() error {
	return errors.Join(l.a.Close(), l.b.Close())
}

// openLineB wraps the server's datagram transport (line A) with line B
// when ServerConfig.MulticastB is set, or IfaceB with UDPPort (a unicast
// line B, bound to IfaceB:UDPPort).
func (s *Server) openLineB() error {
	uni := unicastLineB(&s.cfg)
	if !s.cfg.MulticastB.IsValid() && !uni {
		return nil
	}
	b := s.cfg.TransportB
	if b == nil {
		bind := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
		if uni {
			bind = netip.AddrPortFrom(s.cfg.IfaceB, uint16(s.cfg.UDPPort))
		}
		cfg := UDPConfig{Bind: bind, Iface: s.cfg.IfaceB,
			TTL: s.cfg.TTL, Loopback: s.cfg.Loopback, SocketBuffer: 4 << 20}
		open := s.cfg.NewTransportB
		if open == nil {
			open = func(c UDPConfig) (Transport, error) { return NewUDP(c) }
		}
		t, err := open(cfg)
		if err != nil {
			if s.cfg.Transport == nil {
				s.udp.Close() // line A's, opened for this server
			}
			s.udp = nil
			return fmt.Errorf("replica: line B datagram transport: %w", err)
		}
		b = t
	}
	l := &lineSender{a: s.udp, b: b}
	if s.cfg.MulticastB.IsValid() {
		l.groupA, l.groupB = s.cfg.Multicast, s.cfg.MulticastB
	}
	if uni {
		port := b.LocalAddr().Port()
		if port == 0 {
			port = uint16(s.cfg.UDPPort)
		}
		l.uni = newLineUni(netip.AddrPortFrom(s.cfg.IfaceB, port))
	}
	s.udp = l
	return nil
}

// unicastLineB reports whether a source has a unicast line B: IfaceB
// with UDPPort.
func unicastLineB(cfg *ServerConfig) bool {
	return cfg.UDPPort != 0 && cfg.IfaceB.IsValid()
}

// checkLines validates the line B settings of a ServerConfig.
func checkLines(cfg *ServerConfig) error {
	g := cfg.MulticastB
	if a := cfg.IfaceB; a.IsValid() && (!a.Is4() || a.IsUnspecified() && cfg.UDPPort != 0) {
		return fmt.Errorf("%w: IfaceB %v is not an IPv4 address (of the interface line B's mirrors punch)", ErrLines, a)
	}
	switch {
	case !g.IsValid():
		if cfg.IfaceB.IsValid() && cfg.UDPPort == 0 {
			return fmt.Errorf("%w: IfaceB without MulticastB or UDPPort (a unicast line B)", ErrLines)
		}
		if (cfg.TransportB != nil || cfg.NewTransportB != nil) && !unicastLineB(cfg) {
			return fmt.Errorf("%w: a line B transport without MulticastB or IfaceB and UDPPort", ErrLines)
		}
		return nil
	case !cfg.Multicast.IsValid():
		return fmt.Errorf("%w: MulticastB %v without Multicast (line A)", ErrLines, g)
	case !g.Addr().Is4() || !g.Addr().IsMulticast() || g.Port() == 0:
		return fmt.Errorf("%w: MulticastB %v is not an IPv4 multicast group and port", ErrLines, g)
	case g == cfg.Multicast:
		return fmt.Errorf("%w: MulticastB %v is line A's group", ErrLines, g)
	}
	return nil
}

// ErrLines is a bad line B setting (ServerConfig.MulticastB, IfaceB;
// MirrorConfig.IfaceB).
var ErrLines = errors.New("replica: lines")

// lineBFor is line B's MULTICAST frame for a mirror that announced
// HelloLines: for a unicast line A, lineUnicast's; for the group's
// datagrams (mc, on line A) the same as
// line A's but for the group, and Token, which carries the address line
// B's datagrams leave from (IfaceB, big-endian; 0: not known). Keyed,
// both lines carry the same sealed datagrams: the mirror's one replay
// window takes the first copy of each.
func (s *Server) lineBFor(h wire.Hello, mc wire.Multicast, udp bool) (wire.Multicast, bool) {
	if h.Flags&wire.HelloLines == 0 || !udp {
		return wire.Multicast{}, false
	}
	if mc.Unicast() {
		return s.lineUnicast(mc)
	}
	if !s.cfg.MulticastB.IsValid() {
		return wire.Multicast{}, false
	}
	mc.Group = s.cfg.MulticastB.Addr().As4()
	mc.Port = s.cfg.MulticastB.Port()
	mc.Token = 0
	if a := s.cfg.IfaceB; a.Is4() {
		b := a.As4()
		mc.Token = binary.BigEndian.Uint32(b[:])
	}
	return mc, true
}

// lineSource is the address a line B MULTICAST frame says its datagrams
// leave from (invalid: not known).
func lineSource(mc wire.Multicast) netip.Addr {
	if mc.Token == 0 {
		return netip.Addr{}
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], mc.Token)
	return netip.AddrFrom4(b)
}
