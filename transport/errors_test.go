package transport_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// A datagram above the MTU fails with EMSGSIZE; the datagrams before it in
// the batch go out and are counted as sent, the ones after it do not.
func TestSendTooBig(t *testing.T) {
	xp := newXDPPair(t)
	dst := xp.b.LocalAddr()
	ms := []replica.Message{
		{Buf: payload(1, maxPayload), Addr: dst},
		{Buf: payload(2, maxPayload+1), Addr: dst},
		{Buf: payload(3, 10), Addr: dst},
	}
	n, err := xp.a.SendBatch(ms)
	if n != 1 || !errors.Is(err, unix.EMSGSIZE) {
		t.Fatalf("SendBatch([1472, 1473, 10 bytes]) = %d, %v; want 1, EMSGSIZE", n, err)
	}
	t.Logf("error: %v", err)
	got := recvN(t, xp.b, 1, 2048)
	if len(got) != 1 || !bytes.Equal(got[0].data, ms[0].Buf) {
		t.Fatalf("B received %d datagrams, want the 1472-byte one", len(got))
	}
	expectNone(t, xp.b, 100*time.Millisecond)
	// Alone, and far above the MTU.
	for _, size := range []int{maxPayload + 1, 9000, 65507} {
		if n, err := xp.a.SendBatch([]replica.Message{{Buf: make([]byte, size), Addr: dst}}); n != 0 || !errors.Is(err, unix.EMSGSIZE) {
			t.Errorf("SendBatch(%d bytes) = %d, %v; want 0, EMSGSIZE", size, n, err)
		}
	}
	st := stats(t, xp.a)
	if st.TooBig != 4 {
		t.Errorf("TooBig = %d, want 4", st.TooBig)
	}
	if st.Socket.TXFrames != 1 {
		t.Errorf("Socket.TXFrames = %d, want 1", st.Socket.TXFrames)
	}
	if st.Sent != 1 {
		t.Errorf("Sent = %d, want 1: the first datagram of the failed batch was transmitted "+
			"(SendBatch returned 1) but is not counted (SendBatch returns on the error before counting)", st.Sent)
	}
}

// A destination the interface cannot reach (routed through another
// interface, or not routed at all) is counted in NoRoute and not sent; the
// rest of the batch goes; SendBatch consumes the whole batch.
func TestSendNoRoute(t *testing.T) {
	xp := newXDPPair(t)
	// A second interface, d0 (a veth whose peer stays in A: this kernel
	// has no dummy driver), on 10.99.0.0/24 with a permanent neighbour, so
	// the next hop resolves at once, on the wrong interface.
	exec(t, xp.p.A, "ip", "link", "add", "d0", "type", "veth", "peer", "name", "d1")
	exec(t, xp.p.A, "ip", "addr", "add", "10.99.0.1/24", "dev", "d0")
	exec(t, xp.p.A, "ip", "link", "set", "d0", "up")
	exec(t, xp.p.A, "ip", "link", "set", "d1", "up")
	exec(t, xp.p.A, "ip", "neigh", "replace", "10.99.0.2", "lladdr", "02:00:00:00:99:02", "dev", "d0", "nud", "permanent")
	elsewhere := netip.MustParseAddrPort("10.99.0.2:7630") // routed through d0
	unrouted := netip.MustParseAddrPort("192.0.2.1:7630")  // no route at all
	c := listenUDP(t, xp.p.B, netip.AddrPortFrom(xp.p.BAddr, 7631))
	dst := netip.AddrPortFrom(xp.p.BAddr, 7631)
	ms := []replica.Message{
		{Buf: []byte("first"), Addr: dst},
		{Buf: []byte("via d0"), Addr: elsewhere},
		{Buf: []byte("second"), Addr: dst},
		{Buf: []byte("unrouted"), Addr: unrouted},
		{Buf: []byte("third"), Addr: dst},
	}
	start := time.Now()
	n, err := xp.a.SendBatch(ms)
	if n != len(ms) || err != nil {
		t.Fatalf("SendBatch = %d, %v; want %d, nil", n, err, len(ms))
	}
	t.Logf("SendBatch with two unreachable destinations took %v", time.Since(start))
	for _, want := range []string{"first", "second", "third"} {
		if d := recvKernel(t, c); string(d.data) != want || d.from != xp.a.LocalAddr() {
			t.Fatalf("got %q from %v, want %q from %v", d.data, d.from, want, xp.a.LocalAddr())
		}
	}
	// Again: the failed routes are remembered, and still not sent.
	if n, err := xp.a.SendBatch(ms[1:2]); n != 1 || err != nil {
		t.Fatalf("SendBatch(via d0) = %d, %v", n, err)
	}
	st := stats(t, xp.a)
	if st.NoRoute != 3 {
		t.Errorf("NoRoute = %d, want 3", st.NoRoute)
	}
	if st.Socket.TXFrames != 3 {
		t.Errorf("Socket.TXFrames = %d, want 3 (nothing left for d0 or the unrouted address)", st.Socket.TXFrames)
	}
	if st.Sent != 3 {
		t.Errorf("Sent = %d, want 3: datagrams dropped for NoRoute are counted as sent too "+
			"(SendBatch adds every consumed message to Sent)", st.Sent)
	}
}

// NewXDP on an interface that does not exist fails with ErrXDPUnavailable
// naming the interface.
func TestNewXDPNoInterface(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	err := p.A.Do(func() error {
		x, err := transport.NewXDP(transport.XDPConfig{Iface: "nosuch0"})
		if err == nil {
			x.Close()
		}
		return err
	})
	if !errors.Is(err, transport.ErrXDPUnavailable) || !errContains(err, "nosuch0") {
		t.Fatalf("NewXDP(nosuch0) = %v; want ErrXDPUnavailable naming nosuch0", err)
	}
	t.Logf("error: %v", err)
	// An interface without an IPv4 address.
	exec(t, p.A, "ip", "link", "add", "bare0", "type", "veth", "peer", "name", "bare1")
	exec(t, p.A, "ip", "link", "set", "bare0", "up")
	err = p.A.Do(func() error {
		x, err := transport.NewXDP(transport.XDPConfig{Iface: "bare0"})
		if err == nil {
			x.Close()
		}
		return err
	})
	if !errors.Is(err, transport.ErrXDPUnavailable) || !errContains(err, "bare0") {
		t.Fatalf("NewXDP(bare0 without address) = %v; want ErrXDPUnavailable naming bare0", err)
	}
	t.Logf("error: %v", err)
}

// Transports of one process on one interface share its program and
// sockets: a second transport on another port works beside the first (each
// gets the datagrams to its port, whichever of them drains the sockets),
// one on a port already taken fails with ErrXDPUnavailable, and closing the
// second leaves the first working and the program attached.
func TestTwoTransportsShareInterface(t *testing.T) {
	xp := newXDPPair(t)
	var dup error
	err := xp.p.B.Do(func() error {
		_, dup = transport.NewXDP(transport.XDPConfig{Iface: "veth0", Bind: xp.b.LocalAddr()})
		return nil
	})
	if err != nil || !errors.Is(dup, transport.ErrXDPUnavailable) || !errContains(dup, "already has an AF_XDP transport") {
		t.Fatalf("a second transport on the same port: %v; want ErrXDPUnavailable", dup)
	}
	var second *transport.XDP
	if err := xp.p.B.Do(func() (err error) {
		second, err = transport.NewXDP(transport.XDPConfig{Iface: "veth0"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if second.LocalAddr().Port() == xp.b.LocalAddr().Port() {
		t.Fatalf("both transports on port %d", second.LocalAddr().Port())
	}
	// Datagrams to both ports; each transport drains in turn and gets its own.
	for i := range 50 {
		sendAll(t, xp.a, []replica.Message{
			{Buf: []byte(fmt.Sprintf("first %d", i)), Addr: xp.b.LocalAddr()},
			{Buf: []byte(fmt.Sprintf("second %d", i)), Addr: second.LocalAddr()},
		})
	}
	got2 := recvN(t, second, 50, 2048)
	got1 := recvN(t, xp.b, 50, 2048)
	for i := range 50 {
		if string(got1[i].data) != fmt.Sprintf("first %d", i) || string(got2[i].data) != fmt.Sprintf("second %d", i) {
			t.Fatalf("datagram %d: %q and %q", i, got1[i].data, got2[i].data)
		}
	}
	// A waiting transport is woken for datagrams the other one drained.
	done := make(chan []datagram, 1)
	go func() { done <- recvN(t, second, 1, 2048) }()
	time.Sleep(20 * time.Millisecond)
	sendAll(t, xp.a, []replica.Message{{Buf: []byte("for the second"), Addr: second.LocalAddr()}})
	if g := <-done; len(g) != 1 || string(g[0].data) != "for the second" {
		t.Fatalf("waiting second transport got %v", g)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	out := exec(t, xp.p.B, "ip", "link", "show", "dev", "veth0")
	if !bytes.Contains([]byte(out), []byte("xdp")) {
		t.Errorf("program no longer attached after the second transport closed:\n%s", out)
	}
	sendAll(t, xp.a, []replica.Message{{Buf: []byte("still there?"), Addr: xp.b.LocalAddr()}})
	got := recvN(t, xp.b, 1, 2048)
	if len(got) != 1 || string(got[0].data) != "still there?" {
		t.Fatalf("first transport after the second closed: got %d datagrams; stats %+v", len(got), stats(t, xp.b))
	}
	sendAll(t, xp.b, []replica.Message{{Buf: []byte("yes"), Addr: got[0].from}})
	if got := recvN(t, xp.a, 1, 2048); len(got) != 1 || string(got[0].data) != "yes" {
		t.Fatalf("reply: got %d datagrams", len(got))
	}
}

// Close wakes a RecvBatch blocked without a deadline (ErrClosed); a second
// Close is harmless; every method fails with ErrClosed afterwards.
func TestCloseWakesRecv(t *testing.T) {
	xp := newXDPPair(t)
	x := xp.b
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := x.RecvBatch(newMsgs(4, 2048), -1)
		done <- err
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // let it block (if it returns early, the select below says so)
	select {
	case err := <-done:
		t.Fatalf("RecvBatch(wait -1) returned before Close: %v", err)
	default:
	}
	if err := x.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, replica.ErrClosed) {
			t.Fatalf("blocked RecvBatch after Close: %v, want replica.ErrClosed", err)
		}
	case <-time.After(wait):
		t.Fatal("Close did not wake the blocked RecvBatch")
	}
	if err := x.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := x.RecvBatch(newMsgs(1, 64), 0); !errors.Is(err, replica.ErrClosed) {
		t.Errorf("RecvBatch after Close: %v", err)
	}
	if _, err := x.SendBatch([]replica.Message{{Buf: []byte("x"), Addr: xp.a.LocalAddr()}}); !errors.Is(err, replica.ErrClosed) {
		t.Errorf("SendBatch after Close: %v", err)
	}
	if _, err := x.Stats(); err == nil {
		t.Errorf("Stats after Close: no error")
	}
	// The interface is free again: a new transport opens on it.
	y := openXDP(t, xp.p.B, transport.XDPConfig{})
	sendAll(t, xp.a, []replica.Message{{Buf: []byte("after reopen"), Addr: y.LocalAddr()}})
	if got := recvN(t, y, 1, 2048); len(got) != 1 || string(got[0].data) != "after reopen" {
		t.Fatalf("reopened transport got %d datagrams", len(got))
	}
}

// RecvBatch with a wait returns 0, nil after about that long when nothing
// comes; wait 0 returns at once.
func TestRecvTimeout(t *testing.T) {
	xp := newXDPPair(t)
	ms := newMsgs(4, 2048)
	for range 3 {
		start := time.Now()
		n, err := xp.b.RecvBatch(ms, 50*time.Millisecond)
		d := time.Since(start)
		if n != 0 || err != nil {
			t.Fatalf("RecvBatch(50ms) = %d, %v", n, err)
		}
		if d < 45*time.Millisecond || d > 2*time.Second {
			t.Errorf("RecvBatch(50ms) returned after %v", d)
		}
	}
	start := time.Now()
	if n, err := xp.b.RecvBatch(ms, 0); n != 0 || err != nil || time.Since(start) > time.Second {
		t.Errorf("RecvBatch(0) = %d, %v after %v", n, err, time.Since(start))
	}
}
