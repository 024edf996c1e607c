package transport_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/xdptest"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// Every kind's name parses back to it; other names fail with ErrKind.
func TestParseKind(t *testing.T) {
	for k, label := range map[transport.Kind]string{
		transport.KindUDP: "kernel UDP", transport.KindXDP: "AF_XDP",
		transport.KindAFPacket: "AF_PACKET", transport.KindAuto: "auto",
	} {
		got, err := transport.ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", k.String(), got, err, k)
		}
		if k.Label() != label {
			t.Errorf("%v.Label() = %q, want %q", k, k.Label(), label)
		}
	}
	if _, err := transport.ParseKind("dpdk"); !errors.Is(err, transport.ErrKind) {
		t.Errorf("ParseKind(dpdk) = %v, want ErrKind", err)
	}
}

// openServer opens a server transport on the loopback with cfg, closed by
// the test's cleanup.
func openServer(t *testing.T, cfg transport.Config) (replica.Transport, transport.Choice, error) {
	t.Helper()
	tr, ch, err := cfg.OpenServer(replica.UDPConfig{Bind: netip.MustParseAddrPort("127.0.0.1:0")})
	if tr != nil {
		t.Cleanup(func() { tr.Close() })
	}
	if tr != ch.Transport {
		t.Errorf("OpenServer returned %v, its Choice says %v", tr, ch.Transport)
	}
	return tr, ch, err
}

// Where the kernel-bypass transports cannot be opened (no such interface)
// the server gets kernel UDP, and the Choice says why; with Require it
// gets an error naming every reason.
func TestChooseFallback(t *testing.T) {
	for _, c := range []struct {
		kind          transport.Kind
		xdpErr, pkErr bool
	}{
		{transport.KindUDP, false, false},
		{transport.KindXDP, true, false},
		{transport.KindAFPacket, false, true},
		{transport.KindAuto, true, true},
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			tr, ch, err := openServer(t, transport.Config{Kind: c.kind, Iface: "nosuch0"})
			if err != nil || tr == nil || replica.TransportName(tr) != "udp" {
				t.Fatalf("OpenServer = %v, %v; want kernel UDP", tr, err)
			}
			if ch.Asked != c.kind || ch.Kind != transport.KindUDP || ch.FellBack() != (c.kind != transport.KindUDP) {
				t.Errorf("Choice %+v: want kind udp asked %v", ch, c.kind)
			}
			if got := errors.Is(ch.XDPErr, transport.ErrXDPUnavailable); got != c.xdpErr {
				t.Errorf("XDPErr = %v: want ErrXDPUnavailable %v", ch.XDPErr, c.xdpErr)
			}
			if got := errors.Is(ch.AFPacketErr, transport.ErrAFPacketUnavailable); got != c.pkErr {
				t.Errorf("AFPacketErr = %v: want ErrAFPacketUnavailable %v", ch.AFPacketErr, c.pkErr)
			}
			if c.kind == transport.KindUDP {
				return
			}
			tr, ch, err = openServer(t, transport.Config{Kind: c.kind, Iface: "nosuch0", Require: true})
			if tr != nil || !errors.Is(err, transport.ErrNoBypass) || !errContains(err, "nosuch0") {
				t.Fatalf("OpenServer with Require = %v, %v; want ErrNoBypass naming nosuch0", tr, err)
			}
			for _, why := range []error{ch.XDPErr, ch.AFPacketErr} {
				if why != nil && !errors.Is(err, why) {
					t.Errorf("error %v does not carry the Choice's reason %v", err, why)
				}
			}
		})
	}
}

// Without an interface or a local address to find it by, the kernel-bypass
// transports are refused for that reason; an unknown Kind is an error.
func TestChooseNoInterface(t *testing.T) {
	_, ch, err := openServer(t, transport.Config{Kind: transport.KindAuto})
	if err != nil || !errContains(ch.XDPErr, "no interface") || !errContains(ch.AFPacketErr, "no interface") {
		t.Fatalf("OpenServer(auto, no interface) = %+v, %v; want both refused for want of an interface", ch, err)
	}
	if _, _, err := openServer(t, transport.Config{Kind: 9}); !errors.Is(err, transport.ErrKind) {
		t.Errorf("OpenServer(Kind 9) = %v, want ErrKind", err)
	}
}

// The factories hand each Choice to report, failed ones too.
func TestChooseFactoryReports(t *testing.T) {
	var got []transport.Choice
	report := func(c transport.Choice) { got = append(got, c) }
	cfg := transport.Config{Kind: transport.KindXDP, Iface: "nosuch0"}
	tr, err := cfg.MirrorFactory(report)(replica.DatagramSpec{Source: netip.MustParseAddrPort("127.0.0.1:9")})
	if err != nil {
		t.Fatalf("MirrorFactory: %v", err)
	}
	tr.Close()
	cfg.Require = true
	if _, err := cfg.ServerFactory(report)(replica.UDPConfig{}); !errors.Is(err, transport.ErrNoBypass) {
		t.Errorf("ServerFactory with Require: %v, want ErrNoBypass", err)
	}
	if len(got) != 2 || got[0].Transport != tr || got[0].Kind != transport.KindUDP || got[1].Transport != nil {
		t.Fatalf("reported %+v; want the mirror's kernel UDP, then the server's failure", got)
	}
}

// In a namespace pair, auto takes AF_XDP; where another XDP program holds
// the interface it takes AF_PACKET, saying why; the two exchange
// datagrams.
func TestChooseAuto(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	xdptest.Attach(t, p.B, p.BIf, bpf.ModeNative)
	cfg := transport.Config{Kind: transport.KindAuto, Require: true}
	var a, b transport.Choice
	err := p.A.Do(func() (err error) {
		_, a, err = cfg.OpenServer(replica.UDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 7410), Iface: p.AAddr})
		return err
	})
	if err != nil {
		t.Fatalf("OpenServer in A: %v", err)
	}
	t.Cleanup(func() { a.Transport.Close() })
	err = p.B.Do(func() (err error) {
		_, b, err = cfg.OpenMirror(replica.DatagramSpec{Source: a.Transport.LocalAddr(), Iface: p.BAddr})
		return err
	})
	if err != nil {
		t.Fatalf("OpenMirror in B: %v", err)
	}
	t.Cleanup(func() { b.Transport.Close() })
	if a.Kind != transport.KindXDP || a.Iface != p.AIf || a.Err() != nil {
		t.Errorf("server's choice %+v: want AF_XDP on %s", a, p.AIf)
	}
	if b.Kind != transport.KindAFPacket || b.Iface != p.BIf || !errContains(b.XDPErr, "already has an XDP program") {
		t.Errorf("mirror's choice %+v: want AF_PACKET on %s, AF_XDP refused for the program there", b, p.BIf)
	}
	sendAll(t, a.Transport, []replica.Message{{Buf: payload(1, 100), Addr: b.Transport.LocalAddr()}})
	if got := recvN(t, b.Transport, 1, 2048); len(got) != 1 || got[0].from != a.Transport.LocalAddr() {
		t.Errorf("mirror received %v, want one datagram from %v", got, a.Transport.LocalAddr())
	}
}
