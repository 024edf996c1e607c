package replica_test

// A unicast line B against hostile and old peers: forged, stale and
// misdirected line B PUNCHes, and a mirror without lines.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// uniSession is a hand-made unicast mirror session of a source with a
// unicast line B: its TCP connection and what GEOMETRY announced.
type uniSession struct {
	c      *net.TCPConn
	g      wire.Header
	frames [][]byte // the frames after GEOMETRY, whole
	a, b   wire.Multicast
}

// shakeUnicast sends HELLO with flags and reads GEOMETRY, the MULTICAST
// frames and SESSION.
func shakeUnicast(t *testing.T, tl *twoLines, srv *replica.Server, flags uint8) *uniSession {
	t.Helper()
	s := &uniSession{c: dialTCP(t, tl.p.B, srv.Addr().String())}
	t.Cleanup(func() { s.c.Close() })
	if _, err := s.c.Write(wire.AppendHello(nil, wire.StartNewest, wire.Hello{Flags: flags})); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(s.c)
	s.g, _ = readFrame(t, br)
	if s.g.Kind != wire.KindGeometry {
		t.Fatalf("GEOMETRY: %v", s.g)
	}
	n := 1
	if s.g.Flags&wire.GeometryLines != 0 {
		n = 2
	}
	if s.g.Flags&wire.GeometrySession64 != 0 {
		n++
	}
	for i := range n {
		h, p := readFrame(t, br)
		var hb [wire.HeaderSize]byte
		h.Put(hb[:])
		s.frames = append(s.frames, append(hb[:], p...))
		switch {
		case i == 0:
			s.a, _ = wire.ParseMulticast(p)
		case i == 1 && s.g.Flags&wire.GeometryLines != 0:
			var err error
			if s.b, err = wire.ParseLineB(h, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// udpFrom is a UDP socket of the mirror's namespace on addr that sends b
// to to.
func udpFrom(t *testing.T, tl *twoLines, addr netip.Addr) *net.UDPConn {
	t.Helper()
	c := listenUDP(t, tl.p.B, addr)
	t.Cleanup(func() { c.Close() })
	return c
}

func sendTo(t *testing.T, c *net.UDPConn, b []byte, to netip.AddrPort) {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatal(err)
	}
}

// gets reports whether c receives a DATA datagram of the session within
// d (a read deadline: the negative check's bound, no synchronisation).
func gets(c *net.UDPConn, session uint8, d time.Duration) bool {
	buf := make([]byte, 2048)
	end := time.Now().Add(d)
	for {
		c.SetReadDeadline(end)
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return false
		}
		if h, err := wire.ParseHeader(buf[:n], n); err == nil && h.Kind == wire.KindData && h.Flags == session {
			return true
		}
	}
}

// TestLinesUnicastForgedPunch: a line B PUNCH with a guessed key, another
// session's byte, line A's PUNCH sent to line B, or the key of a session
// that ended is refused and counted, and no datagram goes where it says;
// the live session's PUNCH with its key is taken.
func TestLinesUnicastForgedPunch(t *testing.T) {
	tl := newTwoLines(t)
	srv := tl.serveUnicast(t, false)
	s := shakeUnicast(t, tl, srv, wire.HelloUDP|wire.HelloUnicast|wire.HelloLines)
	if s.g.Flags&wire.GeometryLines == 0 || !s.a.Unicast() || !s.b.Unicast() {
		t.Fatalf("GEOMETRY flags %#x, line A %+v, line B %+v: want two unicast lines", s.g.Flags, s.a, s.b)
	}
	lineA := netip.AddrPortFrom(tl.la.AAddr, s.a.Port)
	lineB := netip.AddrPortFrom(netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, s.b.Token))), s.b.Port)
	if lineB != netip.AddrPortFrom(tl.lb.AAddr, uniPort) || s.b.Key == 0 {
		t.Fatalf("line B at %v, key %#x: want %v:%d and a key", lineB, s.b.Key, tl.lb.AAddr, uniPort)
	}
	sa, sb, forger := udpFrom(t, tl, tl.la.BAddr), udpFrom(t, tl, tl.lb.BAddr), udpFrom(t, tl, tl.lb.BAddr)
	forged := [][]byte{
		wire.AppendLinePunch(nil, s.a.Session, s.b.Key^0x5A5A5A5A5A5A5A5A),    // a guessed key
		wire.AppendLinePunch(nil, s.a.Session+1, s.b.Key),                     // another session's byte
		wire.AppendEmpty(nil, wire.KindPunch, s.a.Session, uint64(s.a.Token)), // line A's PUNCH on line B
		append(wire.AppendLinePunch(nil, s.a.Session, s.b.Key), 0),            // too long
	}
	for _, b := range forged {
		sendTo(t, forger, b, lineB)
	}
	sendTo(t, sa, wire.AppendEmpty(nil, wire.KindPunch, s.a.Session, uint64(s.a.Token)), lineA)
	sendTo(t, sb, wire.AppendLinePunch(nil, s.a.Session, s.b.Key), lineB)
	waitUntil(t, 5*time.Second, "the forged PUNCHes counted", func() bool {
		ls, _ := srv.Lines()
		return ls.BadPunches >= uint64(len(forged))
	})
	tl.src.push(50)
	if !gets(sa, s.a.Session, 5*time.Second) || !gets(sb, s.a.Session, 5*time.Second) {
		t.Fatal("the session's two lines got no DATA")
	}
	if gets(forger, s.a.Session, 200*time.Millisecond) {
		t.Error("a forged line B PUNCH drew datagrams")
	}
	// The session ends: its key is stale.
	s.c.Close()
	waitUntil(t, 5*time.Second, "the session's end", func() bool { return srv.Stats().Mirrors == 0 })
	sendTo(t, forger, wire.AppendLinePunch(nil, s.a.Session, s.b.Key), lineB)
	want := uint64(len(forged)) + 1
	waitUntil(t, 5*time.Second, "the stale PUNCH counted", func() bool {
		ls, _ := srv.Lines()
		return ls.BadPunches == want
	})
	tl.src.push(50)
	if gets(forger, s.a.Session, 200*time.Millisecond) {
		t.Error("a stale line B PUNCH drew datagrams")
	}
	if ls, _ := srv.Lines(); ls.BadPunches != want || srv.Stats().BadPunches != want {
		t.Errorf("line B refused %d PUNCHes, the source %d: want %d", ls.BadPunches, srv.Stats().BadPunches, want)
	}
}

// TestLinesUnicastOldMirror: a unicast mirror without lines gets from a
// source with a unicast line B the bytes a source without one sends (one
// MULTICAST, its header's seq 0), and mirrors over line A as before.
func TestLinesUnicastOldMirror(t *testing.T) {
	tl := newTwoLines(t)
	srv := tl.serveUnicast(t, false)
	old := wire.HelloUDP | wire.HelloUnicast | wire.HelloTelemetry | wire.HelloReportOnAsk | wire.HelloSession64 | wire.HelloHistory
	s := shakeUnicast(t, tl, srv, old)
	if s.g.Flags&wire.GeometryLines != 0 || len(s.frames) != 2 {
		t.Fatalf("GEOMETRY flags %#x, %d frames after it: want no line B, MULTICAST and SESSION", s.g.Flags, len(s.frames))
	}
	want := wire.AppendMulticast(nil, wire.Multicast{Port: uniPort, MTU: wire.DefaultMTU, TTL: 1, Session: s.a.Session, Token: s.a.Token})
	if string(s.frames[0]) != string(want) {
		t.Fatalf("MULTICAST %x, want today's %x", s.frames[0], want)
	}
	s.c.Close()
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, replica.MirrorConfig{From: fromOldest, Unicast: true}, nil)
	mr.connected()
	waitDatagrams(t, mr)
	tl.src.push(3000)
	st := tl.settle(t, mr, 3000, 10*time.Second)
	wantAll(t, st, 3000, "udp unicast")
	if st.Lines != [2]replica.LineStats{} {
		t.Errorf("a one-line mirror counts lines: %+v", st.Lines)
	}
	if ls, _ := srv.Lines(); ls.Datagrams[1] != 0 {
		t.Errorf("line B sent %d datagrams to a mirror of line A", ls.Datagrams[1])
	}
}

// A unicast line B's configuration is checked: IfaceB needs MulticastB or
// UDPPort, a specific IPv4 address; a line B transport needs a line. A
// unicast mirror may have a line B.
func TestLinesUnicastConfigRefused(t *testing.T) {
	ring := filepath.Join(shmDir(t), "src")
	w, err := shm.Create(ring, shm.RingConfig{PayloadSize: 56, Capacity: 1024}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	open := func(replica.UDPConfig) (replica.Transport, error) { return nil, errors.New("not opened") }
	for _, c := range []struct {
		name string
		cfg  replica.ServerConfig
	}{
		{"IfaceB without UDPPort", replica.ServerConfig{IfaceB: netip.MustParseAddr("10.0.0.1")}},
		{"IfaceB unspecified", replica.ServerConfig{UDPPort: uniPort, IfaceB: netip.IPv4Unspecified()}},
		{"IfaceB IPv6", replica.ServerConfig{UDPPort: uniPort, IfaceB: netip.MustParseAddr("::1")}},
		{"transport without IfaceB", replica.ServerConfig{UDPPort: uniPort, NewTransportB: open}},
	} {
		c.cfg.Ring, c.cfg.Bind = ring, "127.0.0.1:0"
		if _, err := replica.NewServer(c.cfg); !errors.Is(err, replica.ErrLines) {
			t.Errorf("%s: NewServer: %v, want ErrLines", c.name, err)
		}
	}
	m, err := replica.NewMirror(replica.MirrorConfig{Source: "127.0.0.1:1", Ring: filepath.Join(t.TempDir(), "m"),
		Unicast: true, IfaceB: netip.MustParseAddr("10.0.0.2")})
	if err != nil {
		t.Errorf("NewMirror with Unicast and IfaceB: %v", err)
	} else {
		m.Close()
	}
}

// TestLinesUnicastOneLineSource: a unicast mirror with a line B of a
// source without one (no IfaceB) is served line A as before.
func TestLinesUnicastOneLineSource(t *testing.T) {
	tl := newTwoLines(t)
	srv := tl.src.serve(replica.ServerConfig{UDPPort: uniPort, Iface: tl.la.AAddr, Bind: netip.AddrPortFrom(tl.la.AAddr, 0).String()})
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, tl.unicastCfg(t, false), nil)
	mr.connected()
	waitDatagrams(t, mr)
	tl.src.push(3000)
	st := tl.settle(t, mr, 3000, 10*time.Second)
	wantAll(t, st, 3000, "udp unicast")
	if st.Lines != [2]replica.LineStats{} || srv.Stats().BadPunches != 0 {
		t.Errorf("lines %+v, %d bad punches: want one line, none", st.Lines, srv.Stats().BadPunches)
	}
}
