package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// FromMode says where a mirror starts.
type FromMode int

const (
	FromLatest FromMode = iota // the newest record, then live
	FromOldest                 // everything the source still retains, then live
	FromResume                 // after the last record of the local mirror ring
	FromSeq                    // at a given sequence (clamped to the oldest retained)
)

// From is a mirror's start position.
type From struct {
	Mode FromMode
	Seq  uint64 // for FromSeq
}

// DatagramSpec tells a transport factory what the source announced.
type DatagramSpec struct {
	Group  netip.AddrPort // multicast group and port; invalid for unicast
	Source netip.AddrPort // the source's UDP address (unicast: punch to it)
	Iface  netip.Addr     // local interface address (optional)
	MTU    int
}

// MirrorConfig configures a mirror.
type MirrorConfig struct {
	Source    string        // the source's TCP address, host:port
	Ring      string        // path of the mirror ring
	From      From          // where to start on the first connection
	Unicast   bool          // ask for UDP unicast (punching through NAT)
	TCPOnly   bool          // do not offer to receive UDP
	Iface     netip.Addr    // local interface for multicast and unicast
	Reconnect time.Duration // wait between reconnections (default 1 s)
	Once      bool          // do not reconnect: Run returns when the source goes
	Spin      bool          // busy-poll instead of blocking when idle
	// NewTransport builds the datagram transport once the source says how
	// datagrams come (default: kernel UDP, NewMirrorUDP).
	NewTransport func(DatagramSpec) (Transport, error)
	// DialTimeout bounds connecting and the handshake (default 10 s).
	DialTimeout time.Duration
	// NoTelemetry does not announce HelloTelemetry: the mirror speaks
	// version 1 exactly and never reports STATUS.
	NoTelemetry bool
	// Name names the mirror in the source's table (default
	// "hostname:ring file name"; at most 32 bytes are sent).
	Name string
	// StatusInterval is how often the mirror reports STATUS to a source
	// that takes it (default DefaultStatusInterval, 100 ms).
	StatusInterval time.Duration
}

// Mirror keeps a local ring identical to a source ring: same sequence
// numbers, same records, in order, never duplicated.
type Mirror struct {
	cfg   MirrorConfig
	ring  *mirrorRing
	seq   *sequencer
	shape wire.Shape
	geom  wire.Geometry
	c     *conn // the current connection, nil between connections

	session    uint8
	hasSession bool
	// restarted: the source restarted under a resumed ring; the next
	// connection starts a fresh ring from the configured start.
	restarted  bool
	stats      MirrorStats
	msgs       []Message // receive batch
	bufs       [][]byte
	nakBuf     []byte
	lastPunch  time.Time
	lastPublic time.Time
	id         uint64 // identity reported in STATUS

	mu     sync.Mutex
	public MirrorStats
}

// stepLimit bounds the datagrams and TCP frames one Step handles, so that
// single-threaded callers get control back under any load.
const stepLimit = 32

// NewMirror prepares a mirror; nothing is connected until Run or Connect.
func NewMirror(cfg MirrorConfig) (*Mirror, error) {
	if cfg.Source == "" || cfg.Ring == "" {
		return nil, errors.New("replica: mirror needs a source address and a ring path")
	}
	if cfg.Reconnect <= 0 {
		cfg.Reconnect = time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.NewTransport == nil {
		cfg.NewTransport = NewMirrorUDP
	}
	m := &Mirror{cfg: cfg, msgs: make([]Message, stepLimit), bufs: make([][]byte, stepLimit)}
	m.initTelemetry()
	for i := range m.bufs {
		m.bufs[i] = make([]byte, MaxMTU)
	}
	return m, nil
}

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
	tc, err := d.DialContext(ctx, "tcp", m.cfg.Source)
	if err != nil {
		return fmt.Errorf("mirror: connect %s: %w", m.cfg.Source, err)
	}
	c := newConn(tc)
	if err := m.handshake(ctx, c); err != nil {
		c.close()
		return fmt.Errorf("mirror: handshake with %s: %w", m.cfg.Source, err)
	}
	m.c = c
	m.stats.Connects++
	c.startReader(max(tcpFrameMax, m.shape.MaxRecord()))
	if c.telemetry {
		c.startStatus()
	}
	return nil
}

func (m *Mirror) handshake(ctx context.Context, c *conn) error {
	if dl, ok := ctx.Deadline(); ok {
		c.tcp.SetDeadline(dl)
		defer c.tcp.SetDeadline(time.Time{})
	}
	flags := uint8(0)
	if !m.cfg.NoTelemetry {
		flags |= wire.HelloTelemetry
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
	h, p, err := c.readFrame(wire.GeometrySize)
	if err != nil {
		return err
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
	if err := m.prepareRing(g, h, mc); err != nil {
		return err
	}
	c.telemetry = !m.cfg.NoTelemetry && h.Flags&wire.GeometryTelemetry != 0
	if h.Flags&wire.GeometryMulticast != 0 {
		return m.openDatagrams(c, mc)
	}
	m.stats.Transport = "tcp"
	m.seq.tcpOnly = true
	return nil
}

// prepareRing keeps the current mirror ring when the source continues it,
// or starts a fresh one (RESET, another layout, a restarted source).
func (m *Mirror) prepareRing(g wire.Geometry, h wire.Header, mc wire.Multicast) error {
	l, err := g.MirrorLayout()
	if err != nil {
		return err
	}
	restarted := m.hasSession && h.Flags&wire.GeometryMulticast != 0 && mc.Session != m.session
	if restarted && h.Flags&wire.GeometryReset == 0 && m.ring != nil {
		// The new source answered a resume of the old one's ring: its
		// records before h.Seq would never come. Start over with a fresh
		// ring, asking from the configured start.
		m.ring.close()
		m.ring, m.seq, m.hasSession, m.restarted = nil, nil, false, true
		return fmt.Errorf("the source restarted (session %d, was %d): reconnecting for a fresh ring", mc.Session, m.session)
	}
	keep := h.Flags&wire.GeometryReset == 0 && !restarted
	if m.ring != nil && (!keep || m.ring.w.Ring().Layout() != l) {
		m.ring.close()
		m.ring = nil
	}
	if m.ring == nil && keep && m.cfg.From.Mode == FromResume && !m.restarted {
		if w, err := shm.OpenWriter(m.cfg.Ring); err == nil {
			if w.Ring().Layout() == l {
				m.ring = newMirrorRing(w)
			} else {
				w.Close()
			}
		}
	}
	if m.ring == nil {
		w, err := shm.CreateLayout(m.cfg.Ring, l, shm.CreateOptions{Replace: true})
		if err != nil {
			return err
		}
		m.ring = newMirrorRing(w)
		m.stats.Resets++
		m.seq = nil
		m.restarted = false
	}
	m.geom, m.shape = g, wire.ShapeOf(g)
	first := max(h.Seq, 1)
	if m.seq == nil {
		m.seq = newSequencer(m.shape, first, m.ring, &m.stats)
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
		if err := m.seq.gap(first); err != nil {
			return err
		}
	}
	if h.Flags&wire.GeometryMulticast != 0 {
		m.session, m.hasSession = mc.Session, true
	}
	return nil
}

// openDatagrams builds the datagram transport the source announced and,
// for unicast, punches to the source.
func (m *Mirror) openDatagrams(c *conn, mc wire.Multicast) error {
	src := c.tcp.RemoteAddr().(*net.TCPAddr).AddrPort()
	spec := DatagramSpec{Iface: m.cfg.Iface, MTU: int(mc.MTU),
		Source: netip.AddrPortFrom(src.Addr().Unmap(), mc.Port)}
	if !mc.Unicast() {
		spec.Group = netip.AddrPortFrom(netip.AddrFrom4(mc.Group), mc.Port)
	}
	t, err := m.cfg.NewTransport(spec)
	if err != nil {
		return fmt.Errorf("datagram transport: %w", err)
	}
	c.udp, c.mc, c.spec = t, mc, spec
	m.stats.Transport = TransportName(t) + " multicast"
	// Until the source says the TCP catch-up is over (its first TCP
	// HEARTBEAT), holes are being filled over TCP: do not NAK them.
	m.seq.suppressNaks = true
	if mc.Unicast() {
		m.stats.Transport = TransportName(t) + " unicast"
		return m.punch(time.Now())
	}
	return nil
}

// punch sends a PUNCH to the source's UDP port (and keeps NAT state warm).
func (m *Mirror) punch(now time.Time) error {
	c := m.c
	if c == nil {
		return nil
	}
	var b [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindPunch, Flags: c.mc.Session, Seq: uint64(c.mc.Token)}.Put(b[:])
	msg := []Message{{Buf: b[:], Addr: c.spec.Source}}
	m.lastPunch = now
	if _, err := c.udp.SendBatch(msg); err != nil {
		return fmt.Errorf("punch %v: %w", c.spec.Source, err)
	}
	return nil
}

// Stats returns a snapshot of the counters, safe from any goroutine (it is
// refreshed at least every millisecond while the mirror runs).
func (m *Mirror) Stats() MirrorStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.public
}

func (m *Mirror) publishStats(now time.Time) {
	if m.seq != nil {
		m.stats.Held, m.stats.Next, m.stats.Lag, m.stats.Heartbeat = len(m.seq.held), m.seq.next, m.seq.lag(), m.seq.hb
	}
	m.mu.Lock()
	m.public = m.stats
	m.mu.Unlock()
	m.lastPublic = now
}

// Close ends the connection and closes the mirror ring.
func (m *Mirror) Close() error {
	m.disconnect()
	var err error
	if m.ring != nil {
		err = m.ring.close()
		m.ring = nil
	}
	m.publishStats(time.Now())
	return err
}

func (m *Mirror) disconnect() {
	if m.c != nil {
		m.c.close()
		m.c = nil
	}
}
