package replica_test

// Bad input: malformed frames and datagrams sent to a server (which drops
// the offender and keeps serving its healthy mirror), and a fake source
// feeding a mirror bad frames.

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// biEvents collects a server's events.
type biEvents struct {
	mu  sync.Mutex
	evs []replica.ServerEvent
}

func (e *biEvents) add(ev replica.ServerEvent) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// wait returns the first event of kind k about peer.
func (e *biEvents) wait(t *testing.T, peer net.Addr, k replica.ServerEventKind) (replica.ServerEvent, bool) {
	t.Helper()
	var found replica.ServerEvent
	ok := poll(5*time.Second, 5*time.Millisecond, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, ev := range e.evs {
			if ev.Kind == k && ev.Peer != nil && ev.Peer.String() == peer.String() {
				found = ev
				return true
			}
		}
		return false
	})
	return found, ok
}

// biRig is a served source with a healthy unicast mirror attached.
type biRig struct {
	p   *netns.Pair
	src *source
	srv *replica.Server
	mr  *mirror
	ev  *biEvents
}

const biUDPPort = 7411

func newBIRig(t *testing.T) *biRig {
	r := &biRig{ev: &biEvents{}}
	r.p, r.src = pairSource(t, 1<<14)
	r.src.push(100)
	r.srv = r.src.serve(replica.ServerConfig{UDPPort: biUDPPort, Events: r.ev.add})
	r.mr = startMirror(t, r.p.B, r.p.BAddr, r.src, replica.MirrorConfig{Unicast: true, From: fromOldest}, nil)
	r.mr.waitFor(100, 10*time.Second)
	return r
}

// healthy pushes more records and checks the mirror catches up byte for
// byte, still on its first connection.
func (r *biRig) healthy(t *testing.T) {
	t.Helper()
	r.src.push(200)
	st := r.mr.waitFor(r.src.w.Next()-1, 10*time.Second)
	sameSlots(t, r.src.path, r.mr.path, 1)
	if st.Connects != 1 || st.Gaps != 0 {
		t.Errorf("healthy mirror disturbed: %+v", st)
	}
}

// dial opens a raw TCP connection to the server from the mirror namespace.
func (r *biRig) dial(t *testing.T) *net.TCPConn {
	t.Helper()
	return dialTCP(t, r.p.B, r.srv.Addr().String())
}

// handshake sends a HELLO and reads GEOMETRY (and MULTICAST if flagged).
func biHandshake(t *testing.T, c net.Conn, flags uint8) (wire.Header, wire.Multicast) {
	t.Helper()
	if _, err := c.Write(wire.AppendHello(nil, wire.StartNewest, wire.Hello{Flags: flags})); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, wire.HeaderSize+48)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	h, err := wire.ParseHeader(b, 48)
	if err != nil || h.Kind != wire.KindGeometry {
		t.Fatalf("expected GEOMETRY: %+v %v", h, err)
	}
	if _, err := wire.ParseGeometry(b[wire.HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	var mc wire.Multicast
	if h.Flags&wire.GeometryMulticast != 0 {
		b = b[:wire.HeaderSize+16]
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		if mc, err = wire.ParseMulticast(b[wire.HeaderSize:]); err != nil {
			t.Fatal(err)
		}
	}
	return h, mc
}

// expectClosed reads until the server closes the connection.
func biExpectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("the server kept the offending connection open")
	}
}

func TestBadInputTCP(t *testing.T) {
	r := newBIRig(t)
	nak := func(first, last uint64) []byte { return wire.AppendNak(nil, first, last) }
	badHello := func(edit func([]byte)) []byte {
		b := wire.AppendHello(nil, 0, wire.Hello{})
		edit(b)
		return b
	}
	cases := []struct {
		name     string
		hello    bool   // complete a valid handshake first
		send     []byte // then send this
		halfOpen bool   // then shut down our side
		kind     replica.ServerEventKind
		want     error
	}{
		{"garbage", false, []byte("GET / HTTP/1.1\r\nHost: ringfire\r\n\r\n"), false, replica.EventRejected, wire.ErrMalformed},
		{"truncated header", false, wire.AppendHello(nil, 0, wire.Hello{})[:9], true, replica.EventRejected, replica.ErrTruncated},
		{"wrong magic", false, badHello(func(b []byte) { b[16] = 'X' }), false, replica.EventRejected, wire.ErrMagic},
		{"wrong version", false, badHello(func(b []byte) { b[24] = 2 }), false, replica.EventRejected, wire.ErrVersion},
		{"oversized length", false, badHello(func(b []byte) { b[6] = 0x10 }), false, replica.EventRejected, wire.ErrTooLarge},
		{"NAK before HELLO", false, nak(1, 1), false, replica.EventRejected, wire.ErrMalformed},
		{"NAK never sent", true, nak(1<<40, 1<<40+5), false, replica.EventDisconnected, wire.ErrMalformed},
		{"NAK too wide", true, nak(1, 1+wire.MaxNakRecords), false, replica.EventDisconnected, wire.ErrMalformed},
		{"NAK reversed", true, nak(50, 10), false, replica.EventDisconnected, wire.ErrMalformed},
		{"oversized after HELLO", true, append([]byte{6, 0, 0, 0, 0, 0, 1, 0}, make([]byte, 8)...), false, replica.EventDisconnected, wire.ErrTooLarge},
		{"half a NAK", true, nak(1, 2)[:20], true, replica.EventDisconnected, replica.ErrTruncated},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			bad := r.srv.Stats().BadFrames
			conn := r.dial(t)
			if c.hello {
				biHandshake(t, conn, 0)
			}
			if _, err := conn.Write(c.send); err != nil {
				t.Fatal(err)
			}
			if c.halfOpen {
				conn.CloseWrite()
			}
			biExpectClosed(t, conn)
			ev, ok := r.ev.wait(t, conn.LocalAddr(), c.kind)
			switch {
			case !ok:
				t.Errorf("no %v event", c.kind)
			case ev.Err == nil:
				t.Errorf("%v event without an error", c.kind)
			case !errors.Is(ev.Err, c.want):
				t.Errorf("event error %q, want %v", ev.Err, c.want)
			}
			t.Logf("event %v: %v", ev.Kind, ev.Err)
			// ServerStats.BadFrames counts "TCP connections closed for a
			// protocol error": after the handshake too.
			biWait(t, "BadFrames", time.Second, func() bool { return r.srv.Stats().BadFrames == bad+1 })
			biWait(t, "only the healthy mirror", 5*time.Second, func() bool { return r.srv.Stats().Mirrors == 1 })
			r.healthy(t)
		})
	}
}

// biWait polls cond for up to d.
func biWait(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	if !poll(d, 5*time.Millisecond, cond) {
		t.Errorf("timed out waiting for %s", what)
	}
}

func TestBadInputUDP(t *testing.T) {
	r := newBIRig(t)
	// A session of our own, to know a valid token.
	ctl := r.dial(t)
	_, mc := biHandshake(t, ctl, wire.HelloUDP|wire.HelloUnicast)
	if !mc.Unicast() || mc.Port != biUDPPort || mc.Session != r.srv.Session() {
		t.Fatalf("MULTICAST %+v, session %d", mc, r.srv.Session())
	}
	go io.Copy(io.Discard, ctl)
	u := listenUDP(t, r.p.B, r.p.BAddr)
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(r.p.AAddr, biUDPPort))
	punch := func(flags uint8, seq uint64) []byte { return wire.AppendEmpty(nil, wire.KindPunch, flags, seq) }
	tok := uint64(mc.Token)
	cases := []struct {
		name      string
		b         []byte
		punchOnly bool // must count as a bad PUNCH (else either counter)
	}{
		{"wrong token", punch(mc.Session, tok^0x5A5A5A5A), true},
		{"wrong session", punch(mc.Session^1, tok), true},
		{"token high bits", punch(mc.Session, tok|1<<32), true},
		{"wrong length", append(punch(mc.Session, tok), 0, 0, 0, 0), false},
		{"short", punch(mc.Session, tok)[:8], false},
		{"garbage", []byte(strings.Repeat("\xffgarbage", 20)), false},
		{"not a PUNCH", wire.AppendEmpty(nil, wire.KindHeartbeat, mc.Session, tok), false},
	}
	for _, c := range cases {
		before := r.srv.Stats()
		if _, err := u.WriteToUDP(c.b, to); err != nil {
			t.Fatal(err)
		}
		biWait(t, c.name, 5*time.Second, func() bool {
			st := r.srv.Stats()
			if c.punchOnly {
				return st.BadPunches == before.BadPunches+1
			}
			return st.BadPunches+st.BadDatagram == before.BadPunches+before.BadDatagram+1
		})
	}
	// None of them made our socket a destination; the mirror still gets
	// its datagrams.
	dg := r.mr.m.Stats().Datagrams
	r.healthy(t)
	if st := r.mr.m.Stats(); st.Datagrams == dg || st.Transport != "udp unicast" {
		t.Errorf("unicast mirror no longer fed by datagrams: %+v", st)
	}
	u.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := u.ReadFromUDP(make([]byte, 2048)); err == nil {
		t.Errorf("a bad PUNCH registered our socket: got a %d-byte datagram", n)
	}
}

// TestBadInputFromSource: a fake source sends a bad GEOMETRY, a DATA frame
// whose length disagrees with its count, or vanishes mid-frame. Each run
// ends with a clear error and the records mirrored before stay intact.
func TestBadInputFromSource(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	geom := fakeGeometry(t)
	var m *replica.Mirror
	// good sends GEOMETRY and records start..start+n-1, waits until the
	// mirror has published them, then sends tail.
	good := func(n int, tail []byte) func(net.Conn, uint64) error {
		return func(c net.Conn, start uint64) error {
			if start == wire.StartOldest || start == wire.StartNewest {
				start = 1
			}
			b := wire.AppendGeometry(nil, start, 0, geom)
			b = append(b, dataFrame(0, start, n, 1)...)
			b = wire.AppendEmpty(b, wire.KindHeartbeat, 0, start+uint64(n)-1)
			if _, err := c.Write(b); err != nil {
				return err
			}
			if !poll(5*time.Second, time.Millisecond, func() bool { return m.Stats().Next >= start+uint64(n) }) {
				return errors.New("the mirror did not take the good records")
			}
			if _, err := c.Write(tail); err != nil || len(tail) == 0 {
				return err
			}
			if h, err := wire.ParseHeader(tail, 1<<20); err == nil && len(tail) == wire.HeaderSize+int(h.Len) {
				// A whole bad frame: wait for the mirror to hang up, so
				// that it meets the frame before our end of stream.
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				io.Copy(io.Discard, c)
			}
			return nil
		}
	}
	badGeom := geom
	badGeom.Capacity = 1000
	wrongLen := dataFrame(0, 61, 2, 1)
	wrongLen[4] = 56 // len 56 for count 2
	wrongLen = wrongLen[:wire.HeaderSize+56]
	f := newFakeSource(t, p.A, p.AAddr,
		good(50, nil), // then a clean close
		func(c net.Conn, start uint64) error {
			_, err := c.Write(wire.AppendGeometry(nil, start, 0, badGeom))
			return err
		},
		good(10, wrongLen),
		good(10, dataFrame(0, 71, 10, 1)[:wire.HeaderSize+100]), // then close mid-frame
	)
	m, ring := f.mirror(t, replica.MirrorConfig{Once: true, DialTimeout: 5 * time.Second, From: fromOldest})
	runs := []struct {
		name string
		want error  // nil: Run returns nil (the source closed cleanly)
		says string // the error names this
		last uint64 // the mirror ring holds 1..last afterwards
	}{
		{"clean close", nil, "", 50},
		{"bad GEOMETRY", wire.ErrMalformed, "capacity", 50},
		{"DATA length", wire.ErrMalformed, "DATA", 60},
		{"mid-frame", replica.ErrTruncated, "mid-frame", 70},
	}
	for _, r := range runs {
		err := runIn(p.B, m, 10*time.Second)
		if ferr := <-f.errc; ferr != nil {
			t.Fatalf("%s: fake source: %v", r.name, ferr)
		}
		switch {
		case r.want == nil && err != nil:
			t.Errorf("%s: Run: %v", r.name, err)
		case r.want != nil && (!errors.Is(err, r.want) || !strings.Contains(err.Error(), r.says)):
			t.Errorf("%s: Run returned %v, want %v naming %q", r.name, err, r.want, r.says)
		}
		t.Logf("%s: %v", r.name, err)
		seqs, _ := readAll(t, ring)
		if err := checkContiguous(seqs, 1, r.last); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}
}
