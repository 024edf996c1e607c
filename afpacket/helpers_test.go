package afpacket_test

// Helpers of this package's tests: a veth pair with an AF_PACKET socket on
// B's end, kernel UDP senders and receivers in the namespaces, frames built
// by package pkt.

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"golang.org/x/net/ipv4"

	"github.com/ringfire/ringfire/afpacket"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
)

const (
	port = 7600
	wait = 10 * time.Second // bounds every wait: other tests share two cores
)

// rig is a veth pair with an AF_PACKET socket on B's end.
type rig struct {
	p    *netns.Pair
	sock *afpacket.Socket
	poll *afpacket.Poller
}

// newRig opens a socket on B's veth of a new pair with cfg; a nil filter
// gets one for B:port.
func newRig(t testing.TB, cfg afpacket.Config) *rig {
	t.Helper()
	netns.Require(t)
	return openRig(t, netns.NewPair(t), cfg)
}

// openRig is newRig on the pair p.
func openRig(t testing.TB, p *netns.Pair, cfg afpacket.Config) *rig {
	t.Helper()
	r := &rig{p: p}
	if cfg.Filter == nil {
		f, err := afpacket.UDPFilter(r.p.BAddr, port)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Filter = f
	}
	err := r.p.B.Do(func() error {
		ifi, err := net.InterfaceByName(r.p.BIf)
		if err != nil {
			return err
		}
		if r.sock, err = afpacket.Open(ifi.Index, cfg); err != nil {
			return err
		}
		r.poll, err = afpacket.NewPoller(r.sock)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.poll != nil {
			r.poll.Close()
		}
		r.sock.Close()
	})
	return r
}

// sendKernel sends datagrams first..first+n-1 from A to dst with kernel
// UDP; datagram i carries i in its first 4 bytes.
func (r *rig) sendKernel(t testing.TB, dst netip.AddrPort, first, n, size int) {
	t.Helper()
	err := r.p.A.Do(func() error {
		// Unconnected: B answers port-unreachable (nothing holds the port),
		// which a connected socket would report on its next write.
		c, err := net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		defer c.Close()
		if dst.Addr().IsMulticast() {
			ifi, err := net.InterfaceByName(r.p.AIf)
			if err != nil {
				return err
			}
			if err := ipv4.NewPacketConn(c).SetMulticastInterface(ifi); err != nil {
				return err
			}
		}
		b := make([]byte, size)
		for i := first; i < first+n; i++ {
			binary.BigEndian.PutUint32(b, uint32(i))
			if _, err := c.WriteToUDPAddrPort(b, dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// receive takes up to n frames within wait, parses them and returns the
// numbers their payloads carry.
func (r *rig) receive(t testing.TB, n int) []uint32 {
	t.Helper()
	frames := make([][]byte, 16)
	var got []uint32
	var p pkt.Packet
	deadline := time.Now().Add(wait)
	for len(got) < n && time.Now().Before(deadline) {
		if _, err := r.poll.WaitFor(100*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		k := r.sock.Receive(frames[:min(len(frames), n-len(got))])
		for _, f := range frames[:k] {
			if err := pkt.Parse(f, &p); err != nil {
				t.Fatalf("frame %d: %v", len(got), err)
			}
			got = append(got, binary.BigEndian.Uint32(p.Payload))
		}
		r.sock.Release()
	}
	return got
}

// expectNone checks that nothing reaches the ring within d.
// statsUntil polls the socket's statistics until done holds for them, and
// fails the test if it does not within wait.
func (r *rig) statsUntil(t testing.TB, done func(afpacket.Stats) bool) afpacket.Stats {
	t.Helper()
	var st afpacket.Stats
	ok := testenv.Await(wait, func() bool {
		var err error
		if st, err = r.sock.Stats(); err != nil {
			t.Fatal(err)
		}
		return done(st)
	})
	if !ok {
		t.Fatalf("stats %+v: condition not met within %v", st, wait)
	}
	return st
}

func (r *rig) expectNone(t testing.TB, d time.Duration) {
	t.Helper()
	frames := make([][]byte, 8)
	var p pkt.Packet
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		r.poll.WaitFor(10*time.Millisecond, nil)
		k := r.sock.Receive(frames)
		for _, f := range frames[:k] {
			err := pkt.Parse(f, &p)
			t.Errorf("unexpected frame of %d bytes: %+v (%v)", len(f), p, err)
		}
	}
}

// listen opens a kernel UDP socket in ns.
func listen(t testing.TB, ns *netns.NS, addr netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// macOf is the MAC address of ifname in ns.
func macOf(t testing.TB, ns *netns.NS, ifname string) (m pkt.MAC) {
	t.Helper()
	if err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err == nil {
			copy(m[:], ifi.HardwareAddr)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// template is the header of datagrams from B:port+1 to A:port.
func (r *rig) template(t testing.TB) *pkt.Template {
	t.Helper()
	tmpl, err := pkt.NewTemplate(pkt.Header{
		Src: macOf(t, r.p.B, r.p.BIf), Dst: macOf(t, r.p.A, r.p.AIf),
		SrcAddr: netip.AddrPortFrom(r.p.BAddr, port+1), DstAddr: netip.AddrPortFrom(r.p.AAddr, port),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// atomicBool is a flag set by one goroutine and read by another.
type atomicBool struct{ v atomic.Bool }

func (b *atomicBool) set()      { b.v.Store(true) }
func (b *atomicBool) get() bool { return b.v.Load() }
