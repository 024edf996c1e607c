package transport_test

// BenchmarkPingPong: the round trip of one 64-byte datagram between two
// namespaces over one veth pair, through each datagram path the replica
// layer can use (kernel UDP, AF_XDP, AF_PACKET; and TCP for reference), in
// the same run. AF_PACKET's receive ring hands each frame over as the
// kernel writes it (TPACKET_V2, the default; the TPACKET_V3 block ring
// waited for its 1 ms retire timer). One op is one
// round trip: A sends, B's echo goroutine receives and sends back, A
// receives. Percentiles come from an HDR histogram of every op.
//
//	go test -run '^$' -bench PingPong -benchtime 3s ./transport

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// pinger is one end of a datagram ping-pong.
type pinger interface {
	SendBatch([]replica.Message) (int, error)
	RecvBatch([]replica.Message, time.Duration) (int, error)
	LocalAddr() netip.AddrPort
}

func BenchmarkPingPong(b *testing.B) {
	netns.Require(b)
	for _, c := range []struct {
		name string
		spin bool
	}{{"udp", false}, {"xdp", false}, {"afpacket", false}, {"udp-spin", true}, {"xdp-spin", true}, {"afpacket-spin", true}} {
		b.Run(c.name, func(b *testing.B) {
			p := netns.NewPair(b)
			var x, y pinger
			switch {
			case strings.HasPrefix(c.name, "xdp"):
				x = openXDP(b, p.A, transport.XDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 0)})
				y = openXDP(b, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)})
			case strings.HasPrefix(c.name, "afpacket"):
				x = openPacket(b, p.A, transport.AFPacketConfig{})
				y = openPacket(b, p.B, transport.AFPacketConfig{})
			default:
				x = openUDP(b, p.A, p.AAddr)
				y = openUDP(b, p.B, p.BAddr)
			}
			wait := time.Duration(-1)
			if c.spin {
				wait = 0
			}
			pingPong(b, x, y, wait)
		})
	}
	b.Run("tcp", func(b *testing.B) { tcpPingPong(b, netns.NewPair(b)) })
}

func openUDP(b *testing.B, ns *netns.NS, addr netip.Addr) *replica.UDP {
	var u *replica.UDP
	err := ns.Do(func() (err error) {
		u, err = replica.NewUDP(replica.UDPConfig{Bind: netip.AddrPortFrom(addr, 0), SocketBuffer: 4 << 20})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { u.Close() })
	return u
}

// pingPong times b.N round trips from x to y and back; wait is how the
// ends receive (-1 block, 0 spin).
func pingPong(b *testing.B, x, y pinger, wait time.Duration) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the echo
		defer close(done)
		ms := []replica.Message{{Buf: make([]byte, 2048)}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := y.RecvBatch(ms, waitOr(wait, 50*time.Millisecond))
			if err != nil {
				return
			}
			if n == 1 {
				out := []replica.Message{{Buf: ms[0].Buf[:ms[0].N], Addr: ms[0].Addr}}
				y.SendBatch(out)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	out := []replica.Message{{Buf: make([]byte, 64), Addr: y.LocalAddr()}}
	in := []replica.Message{{Buf: make([]byte, 2048)}}
	h := hdrhistogram.New(1, 100_000_000, 3)
	roundTrip := func() time.Duration {
		start := time.Now()
		if _, err := x.SendBatch(out); err != nil {
			b.Fatal(err)
		}
		for deadline := start.Add(time.Second); time.Now().Before(deadline); {
			n, err := x.RecvBatch(in, waitOr(wait, 100*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			if n == 1 {
				return time.Since(start)
			}
		}
		b.Fatal("no echo within 1 s")
		return 0
	}
	for range 200 { // warm up: neighbours, templates, caches
		roundTrip()
	}
	b.ResetTimer()
	for range b.N {
		h.RecordValue(roundTrip().Nanoseconds())
	}
	b.StopTimer()
	report(b, h)
}

// waitOr is wait, or d when wait blocks without limit (so the loops can
// notice the end).
func waitOr(wait, d time.Duration) time.Duration {
	if wait < 0 {
		return d
	}
	return wait
}

func report(b *testing.B, h *hdrhistogram.Histogram) {
	for _, q := range []float64{50, 99, 99.9} {
		b.ReportMetric(float64(h.ValueAtQuantile(q))/1e3, "p"+trimQ(q)+"-µs")
	}
	b.ReportMetric(float64(h.Min())/1e3, "min-µs")
}

func trimQ(q float64) string {
	switch q {
	case 50:
		return "50"
	case 99:
		return "99"
	}
	return "99.9"
}

// tcpPingPong is the same round trip over a TCP connection (TCP_NODELAY).
func tcpPingPong(b *testing.B, p *netns.Pair) {
	var ln net.Listener
	if err := p.B.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(p.BAddr, 0).String())
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	var c net.Conn
	if err := p.A.Do(func() (err error) {
		c, err = net.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	h := hdrhistogram.New(1, 100_000_000, 3)
	rt := func() time.Duration {
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 200 {
		rt()
	}
	b.ResetTimer()
	for range b.N {
		h.RecordValue(rt().Nanoseconds())
	}
	b.StopTimer()
	report(b, h)
}
