package replica_test

// Hostile peers against a source: a PUNCH for someone else, a STATUS
// claiming what was never sent, more connections than the limits allow.

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// punchFrom sends a PUNCH for (session, token) to the source's UDP port
// from u.
func punchFrom(t *testing.T, u *replica.UDP, session uint8, token uint32, to netip.AddrPort) {
	t.Helper()
	var b [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindPunch, Flags: session, Seq: uint64(token)}.Put(b[:])
	if _, err := u.SendBatch([]replica.Message{{Buf: b[:], Addr: to}}); err != nil {
		t.Fatal(err)
	}
}

// TestSpoofedPunchRefused: a peer with a session of its own sends its
// PUNCH from another host (as a spoofed source address would): the source
// refuses it (BadPunches) and sends that host nothing. The same PUNCH
// from the peer's own host is accepted: only the address was wrong.
func TestSpoofedPunchRefused(t *testing.T) {
	lan, src := lanSource(t, 3, 1024)
	srv := src.serve(replica.ServerConfig{UDPPort: 7403})
	var c net.Conn
	if err := lan.Hosts[1].Do(func() (err error) { c, err = net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, mc := biHandshake(t, c, wire.HelloUDP|wire.HelloUnicast)
	to := netip.AddrPortFrom(lan.Addrs[0], mc.Port)
	victim := newUDPIn(t, lan.Hosts[2], replica.UDPConfig{Iface: lan.Addrs[2]})
	punchFrom(t, victim, mc.Session, mc.Token, to)
	testenv.Until(t, 5*time.Second, "the spoofed PUNCH refused", func() bool { return srv.Stats().BadPunches >= 1 })
	src.push(10)
	attacker := newUDPIn(t, lan.Hosts[1], replica.UDPConfig{Iface: lan.Addrs[1]})
	punchFrom(t, attacker, mc.Session, mc.Token, to)
	ms := []replica.Message{{Buf: make([]byte, 2048)}}
	n, err := attacker.RecvBatch(ms, 5*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("the PUNCH from the session's own host got no datagram: n %d, %v; %+v", n, err, srv.Stats())
	}
	if k, _ := victim.RecvBatch(ms, 0); k != 0 {
		t.Fatalf("the host named by the spoofed PUNCH got %d datagrams", k)
	}
	if st := srv.Stats(); st.BadPunches != 1 {
		t.Fatalf("BadPunches %d, want 1: %+v", st.BadPunches, st)
	}
}

// TestForgedStatusEndsSession: a peer claiming in STATUS to have applied
// records the source never sent is cut off (BadFrames), and Server.AwaitApplied
// never counts it.
func TestForgedStatusEndsSession(t *testing.T) {
	p, src := pairSource(t, 1024)
	srv := src.serve(replica.ServerConfig{})
	src.push(5)
	c := dialTCP(t, p.B, srv.Addr().String())
	h, _ := biHandshake(t, c, wire.HelloTelemetry)
	if h.Flags&wire.GeometryTelemetry == 0 {
		t.Fatalf("telemetry not acknowledged: %+v", h)
	}
	forged := wire.AppendStatus(nil, wire.Status{Applied: 1<<64 - 1, Interval: 100 * time.Millisecond, ID: 7, Name: "forger"})
	if _, err := c.Write(forged); err != nil {
		t.Fatal(err)
	}
	biExpectClosed(t, c)
	testenv.Until(t, 5*time.Second, "the forger's session closed as a protocol error", func() bool { return srv.Stats().BadFrames >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if n, _ := srv.AwaitApplied(ctx, 1, 1000); n != 0 {
		t.Fatalf("AwaitApplied counted %d mirrors for record 1000, which does not exist", n)
	}
	for _, m := range srv.Mirrors() {
		if m.Applied > 5 {
			t.Fatalf("the table believes the forgery: %+v", m)
		}
	}
}

// TestConnectionLimits: past MaxConnsPerAddr, and past MaxPending, new
// connections are closed at once and counted; the legitimate mirror on
// another host still connects and replicates.
func TestConnectionLimits(t *testing.T) {
	lan, src := lanSource(t, 3, 1024)
	srv := src.serve(replica.ServerConfig{MaxConnsPerAddr: 4, MaxPending: 6})
	idle := func(srv *replica.Server, ns int, n int) {
		for range n {
			dialTCP(t, lan.Hosts[ns], srv.Addr().String()) // never says HELLO: pending
		}
	}
	idle(srv, 2, 10) // 4 admitted, 6 refused by the address limit
	testenv.Until(t, 5*time.Second, "6 refused from one address", func() bool { return srv.Stats().Refused >= 6 })
	idle(srv, 1, 3) // 2 more pending admitted (6 in all), then the pending limit
	testenv.Until(t, 5*time.Second, "the pending limit", func() bool { return srv.Stats().Refused >= 7 })
	if st := srv.Stats(); st.Refused != 7 {
		t.Fatalf("refused %d connections, want 7: %+v", st.Refused, st)
	}
	// Refused connections are closed by the source: reading one ends.
	var c net.Conn
	if err := lan.Hosts[2].Do(func() (err error) { c, err = net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	biExpectClosed(t, c)
	c.Close()
	// The pending slots of the idle peers are freed by the handshake
	// deadline (HandshakeTimeout) or by eviction; the test lets the
	// per-address slots be the only limit left.
	src.close()
	srv2 := src.serve(replica.ServerConfig{MaxConnsPerAddr: 4})
	idle(srv2, 2, 6)
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	src.push(100)
	mr.waitFor(100, 10*time.Second)
	if st := srv2.Stats(); st.Refused < 2 {
		t.Fatalf("the address limit refused %d, want ≥ 2: %+v", st.Refused, st)
	}
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}

// TestAcceptSurvivesEMFILE: with the process out of file descriptors,
// Serve's accepts fail (AcceptErrors); it backs off and keeps accepting,
// and once descriptors are free a mirror connects and replicates.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	p, src := pairSource(t, 1024)
	srv := src.serve(replica.ServerConfig{MaxConnsPerAddr: -1, MaxPending: -1})
	restore := lowerFDLimit(t, 64)
	defer restore()
	// The client sockets exist before the descriptors run out, so their
	// connects need none: the kernel completes the handshakes into the
	// listen queue and the source's accepts, with no descriptor left,
	// fail. (Dialing after the limit would race the source for the last
	// descriptor and might find none to connect with.)
	var socks []int
	defer func() {
		for _, fd := range socks {
			syscall.Close(fd)
		}
	}()
	if err := p.B.Do(func() error {
		for range 4 {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			socks = append(socks, fd)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fill := exhaustFDs(t)
	ap := srv.Addr()
	sa := &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	for _, fd := range socks {
		if err := syscall.Connect(fd, sa); err != nil {
			fill()
			t.Fatalf("connect: %v", err)
		}
	}
	testenv.Until(t, 10*time.Second, "an accept failing for want of descriptors", func() bool { return srv.Stats().AcceptErrors >= 1 })
	fill()
	restore()
	for _, fd := range socks {
		syscall.Close(fd)
	}
	socks = nil
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	src.push(100)
	mr.waitFor(100, 10*time.Second)
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
	t.Logf("server %+v", srv.Stats())
}

// exhaustFDs opens /dev/null until the process's descriptor limit is
// reached (bounded by the limit lowerFDLimit set) and returns the function
// that closes them all again.
func exhaustFDs(t *testing.T) (release func()) {
	t.Helper()
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close()
		}
		held = nil
	}
	t.Cleanup(release)
	for range 1 << 16 {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			return release
		}
		if err != nil {
			release()
			t.Fatal(err)
		}
		held = append(held, f)
	}
	release()
	t.Fatal("the descriptor limit was never reached")
	return nil
}

// TestReaderThatNeverReads: a peer that asks for history (NAKs) and never
// reads what comes back is cut off once its buffers are full and a write
// has waited its timeout; the legitimate mirror keeps up throughout, and
// the table forgets the peer.
func TestReaderThatNeverReads(t *testing.T) {
	lan, src := lanSource(t, 3, 1<<16)
	src.push(60000) // 3.4 MB of history: more than any socket buffer
	var ended atomic.Int32
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup(), Events: func(e replica.ServerEvent) {
		if e.Kind == replica.EventDisconnected && e.Err != nil {
			ended.Add(1)
		}
	}})
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	mr.waitFor(60000, 20*time.Second)
	c := dialNonReader(t, lan.Hosts[2], srv.Addr().String())
	defer c.Close()
	biHandshake(t, c, wire.HelloUDP)
	for first := uint64(1); first < 60000; first += 20000 { // three NAKs, never a read
		if _, err := c.Write(wire.AppendNak(nil, first, first+19999)); err != nil {
			t.Fatal(err)
		}
	}
	// The legitimate mirror keeps replicating while the non-reader's
	// session is stuck, batch after batch...
	for i := range uint64(20) {
		src.push(100)
		mr.waitFor(60000+100*(i+1), 10*time.Second)
	}
	testenv.Until(t, 30*time.Second, "the non-reader's session ended", func() bool { return ended.Load() >= 1 })
	// ...and after it was cut off.
	src.push(2000)
	mr.waitFor(64000, 20*time.Second)
	for _, m := range srv.Mirrors() {
		if m.Connected && m.Addr.Addr() == lan.Addrs[2] {
			t.Fatalf("the non-reader is still in the table: %+v", m)
		}
	}
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}

// lowerFDLimit limits the process to extra descriptors more than it has
// open now, until the returned function (also run by the cleanup)
// restores the limit.
func lowerFDLimit(t *testing.T, extra int) (restore func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(fds) + extra)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// dialNonReader connects from ns to addr with a 4 KB receive buffer: a
// peer that will never read fills it at once.
func dialNonReader(t *testing.T, ns *netns.NS, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	if err := ns.Do(func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		c, err = d.Dial("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}
