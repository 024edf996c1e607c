package transport_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// openPacket opens an AF_PACKET transport on cfg.Iface (default "veth0")
// in ns, closed by the test's cleanup.
func openPacket(t testing.TB, ns *netns.NS, cfg transport.AFPacketConfig) *transport.AFPacket {
	t.Helper()
	if cfg.Iface == "" {
		cfg.Iface = "veth0"
	}
	var a *transport.AFPacket
	if err := ns.Do(func() (err error) {
		a, err = transport.NewAFPacket(cfg)
		return err
	}); err != nil {
		t.Fatalf("NewAFPacket(%+v) in %s: %v", cfg, ns.Name, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func packetStats(t testing.TB, a *transport.AFPacket) transport.AFPacketStats {
	t.Helper()
	st, err := a.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// echoAll sends total datagrams of every size from x to y in windows of
// 32; y echoes each back to where it came from; both sides get every one,
// intact.
func echoAll(t *testing.T, x, y replica.Transport, total int) {
	t.Helper()
	const window = 32
	out := make([]replica.Message, window)
	in := newMsgs(window, 2048)
	for base := 0; base < total; base += window {
		w := min(window, total-base)
		for i := range w {
			out[i] = replica.Message{Buf: payload(base+i, size(base+i)), Addr: y.LocalAddr()}
		}
		sendAll(t, x, out[:w])
		got := recvN(t, y, w, 2048)
		if len(got) != w {
			t.Fatalf("window at %d: %d of %d datagrams arrived", base, len(got), w)
		}
		echo := make([]replica.Message, w)
		for i, d := range got {
			if !bytes.Equal(d.data, out[i].Buf) || d.from != x.LocalAddr() {
				t.Fatalf("datagram %d: %d bytes from %v, want %d from %v", base+i, len(d.data), d.from, len(out[i].Buf), x.LocalAddr())
			}
			echo[i] = replica.Message{Buf: d.data, Addr: d.from}
		}
		sendAll(t, y, echo)
		back := recvN(t, x, w, 2048)
		for i := range back {
			if !bytes.Equal(back[i].data, out[i].Buf) || back[i].from != y.LocalAddr() {
				t.Fatalf("echo %d: %d bytes from %v", base+i, len(back[i].data), back[i].from)
			}
		}
		if len(back) != w {
			t.Fatalf("window at %d: %d of %d echoes arrived", base, len(back), w)
		}
		_ = in
	}
}

// Datagrams of every size go both ways between AF_PACKET transports, and
// between AF_PACKET and AF_XDP, each once, intact, in order.
func TestAFPacketUnicast(t *testing.T) {
	netns.Require(t)
	t.Run("afpacket-afpacket", func(t *testing.T) {
		p := netns.NewPair(t)
		a := openPacket(t, p.A, transport.AFPacketConfig{Bind: netip.AddrPortFrom(p.AAddr, 0)})
		b := openPacket(t, p.B, transport.AFPacketConfig{})
		if b.LocalAddr().Addr() != p.BAddr || b.LocalAddr().Port() == 0 || b.Name() != "afpacket" || replica.TransportName(b) != "afpacket" {
			t.Fatalf("B: %v %q, want %v and a port, \"afpacket\"", b.LocalAddr(), b.Name(), p.BAddr)
		}
		echoAll(t, a, b, 3000)
		sa, sb := packetStats(t, a), packetStats(t, b)
		if sa.Sent != 3000 || sa.Received != 3000 || sb.Sent != 3000 || sb.Received != 3000 ||
			sb.Socket.RXFrames != 3000 || sb.Socket.Drops != 0 || sb.Malformed+sb.Stray+sb.Truncated != 0 {
			t.Errorf("stats A %+v\nB %+v", sa, sb)
		}
	})
	t.Run("afpacket-xdp", func(t *testing.T) {
		p := netns.NewPair(t)
		a := openPacket(t, p.A, transport.AFPacketConfig{})
		b := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)})
		echoAll(t, a, b, 1000)
		echoAll(t, b, a, 1000)
	})
}

// An AF_PACKET transport talks to kernel UDP both ways (the kernel's
// frames over veth carry partial checksums), and receives a multicast
// group; the kernel socket holding its port queues nothing.
func TestAFPacketKernel(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	group := netip.MustParseAddrPort("239.255.0.9:7670")
	b := openPacket(t, p.B, transport.AFPacketConfig{})
	m := openPacket(t, p.B, transport.AFPacketConfig{Bind: netip.AddrPortFrom(netip.Addr{}, group.Port()), Group: group.Addr()})
	if m.LocalAddr() != netip.AddrPortFrom(p.BAddr, group.Port()) {
		t.Fatalf("multicast LocalAddr %v", m.LocalAddr())
	}
	from := netip.AddrPortFrom(p.AAddr, 7671)
	for i := range 50 {
		sendKernel(t, p.A, from, b.LocalAddr(), p.AIf, payload(i, size(i)))
	}
	sendKernel(t, p.A, from, group, p.AIf, payload(1, 100), payload(2, 1472))
	got := recvN(t, b, 50, 2048)
	if len(got) != 50 {
		for _, d := range got {
			t.Logf("%d bytes from %v: %x", len(d.data), d.from, clip(d.data))
		}
		t.Logf("stats %+v", packetStats(t, b))
	}
	for i, d := range got {
		if !bytes.Equal(d.data, payload(i, size(i))) || d.from != from {
			t.Fatalf("unicast %d: %d bytes from %v", i, len(d.data), d.from)
		}
	}
	if mg := recvN(t, m, 2, 2048); len(got) != 50 || len(mg) != 2 || !bytes.Equal(mg[1].data, payload(2, 1472)) {
		t.Fatalf("received %d unicast, %d multicast", len(got), len(mg))
	}
	expectNone(t, b, 20*time.Millisecond) // the group's datagrams are not b's

	c := listenUDP(t, p.A, netip.AddrPortFrom(p.AAddr, 7672))
	sendAll(t, b, []replica.Message{{Buf: []byte("to the kernel"), Addr: netip.AddrPortFrom(p.AAddr, 7672)}})
	if d := recvKernel(t, c); string(d.data) != "to the kernel" || d.from != b.LocalAddr() {
		t.Fatalf("kernel got %q from %v", d.data, d.from)
	}
	if q := exec(t, p.B, "ss", "-Hunl", "sport", "= :"+itoa(b.LocalAddr().Port())); !bytes.Contains([]byte(q), []byte("UNCONN 0 ")) {
		t.Errorf("the kernel socket holding the port queued datagrams:\n%s", q)
	}
}

// Close wakes a blocked RecvBatch; later calls fail with ErrClosed; a
// datagram larger than the MTU fails with EMSGSIZE; a missing interface
// is ErrAFPacketUnavailable.
func TestAFPacketErrors(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	a := openPacket(t, p.A, transport.AFPacketConfig{})
	dst := netip.AddrPortFrom(p.BAddr, 7673)
	listenUDP(t, p.B, dst)
	if n, err := a.SendBatch([]replica.Message{{Buf: make([]byte, 10), Addr: dst}, {Buf: make([]byte, 1473), Addr: dst}}); n != 1 || !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("SendBatch of a 1473-byte datagram: %d, %v", n, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.RecvBatch(newMsgs(1, 2048), -1)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	a.Close()
	select {
	case err := <-done:
		if !errors.Is(err, replica.ErrClosed) {
			t.Fatalf("RecvBatch after Close: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Close did not wake RecvBatch")
	}
	if _, err := a.SendBatch([]replica.Message{{Buf: make([]byte, 10), Addr: dst}}); !errors.Is(err, replica.ErrClosed) {
		t.Errorf("SendBatch after Close: %v", err)
	}
	err := p.A.Do(func() error {
		_, err := transport.NewAFPacket(transport.AFPacketConfig{Iface: "nosuch0"})
		return err
	})
	if !errors.Is(err, transport.ErrAFPacketUnavailable) || !errContains(err, "nosuch0") {
		t.Errorf("NewAFPacket on a missing interface: %v", err)
	}
}

// After warm-up, SendBatch of 32 messages and RecvBatch do not allocate.
func TestAFPacketNoAllocs(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	a := openPacket(t, p.A, transport.AFPacketConfig{})
	b := openPacket(t, p.B, transport.AFPacketConfig{})
	out := make([]replica.Message, 32)
	for i := range out {
		out[i] = replica.Message{Buf: payload(i, 64+i*30), Addr: b.LocalAddr()}
	}
	sendAll(t, a, out)
	in := newMsgs(32, 2048)
	recvN(t, b, 32, 2048)
	received := 0
	if n := testing.AllocsPerRun(50, func() {
		if k, err := a.SendBatch(out); k != len(out) || err != nil {
			t.Fatalf("SendBatch = %d, %v", k, err)
		}
		// The frames cross the veth asynchronously, and a block retires
		// after a millisecond: take what is there.
		k, err := b.RecvBatch(in, 0)
		if err != nil {
			t.Fatal(err)
		}
		received += k
	}); n != 0 {
		t.Errorf("%v allocations per SendBatch + RecvBatch", n)
	}
	if received == 0 {
		t.Error("nothing received while measuring")
	}
}

func itoa(v uint16) string {
	var b [5]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		if v /= 10; v == 0 {
			return string(b[i:])
		}
	}
}
