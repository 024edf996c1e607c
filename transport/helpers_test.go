package transport_test

// Helpers shared by the tests of this package: AF_XDP transports and
// kernel UDP sockets opened in a namespace, bounded receive loops, payloads
// and counters.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// wait bounds every wait of these tests: generous, since tests of other
// packages may run beside them on two cores.
const wait = 10 * time.Second

// openXDP opens an AF_XDP transport on cfg.Iface (default "veth0") in ns,
// closed by the test's cleanup.
func openXDP(t testing.TB, ns *netns.NS, cfg transport.XDPConfig) *transport.XDP {
	t.Helper()
	if cfg.Iface == "" {
		cfg.Iface = "veth0"
	}
	if cfg.Socket.RingSize == 0 {
		cfg.Socket.RingSize = 1024 // 4 MiB of UMEM per socket: several run at once
	}
	var x *transport.XDP
	err := ns.Do(func() (err error) {
		x, err = transport.NewXDP(cfg)
		return err
	})
	if err != nil {
		t.Fatalf("NewXDP(%+v) in %s: %v", cfg, ns.Name, err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// listenUDP opens a kernel UDP socket bound to addr in ns, closed by the
// test's cleanup.
func listenUDP(t testing.TB, ns *netns.NS, addr netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		t.Fatalf("listen %v in %s: %v", addr, ns.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stats returns x's counters or fails the test.
func stats(t testing.TB, x *transport.XDP) transport.XDPStats {
	t.Helper()
	st, err := x.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// datagram is a received datagram (copied out of the caller's buffer).
type datagram struct {
	data []byte
	from netip.AddrPort
}

// recvN receives until n datagrams arrived or wait passed, with buffers of
// bufSize bytes, and returns what arrived.
func recvN(t testing.TB, x replica.Transport, n, bufSize int) []datagram {
	t.Helper()
	return recvWithin(t, x, n, bufSize, wait)
}

// recvWithin is recvN waiting at most d.
func recvWithin(t testing.TB, x replica.Transport, n, bufSize int, d time.Duration) []datagram {
	t.Helper()
	ms := newMsgs(64, bufSize)
	var out []datagram
	deadline := time.Now().Add(d)
	for len(out) < n && time.Now().Before(deadline) {
		k, err := x.RecvBatch(ms[:min(len(ms), n-len(out))], 100*time.Millisecond)
		if err != nil {
			t.Fatalf("RecvBatch: %v (after %d of %d datagrams)", err, len(out), n)
		}
		for _, m := range ms[:k] {
			out = append(out, datagram{bytes.Clone(m.Buf[:m.N]), m.Addr})
		}
	}
	return out
}

// expectNone checks that x has nothing to receive within d.
func expectNone(t testing.TB, x replica.Transport, d time.Duration) {
	t.Helper()
	ms := newMsgs(8, 2048)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		k, err := x.RecvBatch(ms, 20*time.Millisecond)
		if err != nil {
			t.Fatalf("RecvBatch: %v", err)
		}
		for _, m := range ms[:k] {
			t.Errorf("unexpected datagram of %d bytes from %v: %q", m.N, m.Addr, clip(m.Buf[:m.N]))
		}
	}
}

// recvKernel reads one datagram from c within wait.
func recvKernel(t testing.TB, c *net.UDPConn) datagram {
	t.Helper()
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(wait))
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("read on %v: %v", c.LocalAddr(), err)
	}
	return datagram{buf[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port())}
}

func newMsgs(n, size int) []replica.Message {
	ms := make([]replica.Message, n)
	for i := range ms {
		ms[i].Buf = make([]byte, size)
	}
	return ms
}

// payload is datagram i of size bytes: i in the first (up to) 4 bytes,
// then bytes that depend on i and their offset.
func payload(i, size int) []byte {
	b := make([]byte, size)
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(i))
	copy(b, h[:])
	for j := 4; j < size; j++ {
		b[j] = byte(i*31 + j*7)
	}
	return b
}

// size is the payload size of datagram i: every size from 1 to 1472 comes
// up, the extremes first.
func size(i int) int {
	switch i {
	case 0:
		return 1
	case 1:
		return maxPayload
	}
	return 1 + (i*977)%maxPayload
}

const maxPayload = 1500 - pkt.IPv4Len - pkt.UDPLen // 1472 on a 1500-byte MTU

// clip shortens b for messages.
func clip(b []byte) []byte {
	if len(b) > 16 {
		return b[:16]
	}
	return b
}

// sendKernel sends each payload from a fresh kernel UDP socket in ns bound
// to from (port 0: any) to dst; multicast leaves through ifname.
func sendKernel(t testing.TB, ns *netns.NS, from, dst netip.AddrPort, ifname string, payloads ...[]byte) {
	t.Helper()
	err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(from))
		if err != nil {
			return err
		}
		defer c.Close()
		if dst.Addr().IsMulticast() {
			ifi, err := net.InterfaceByName(ifname)
			if err != nil {
				return err
			}
			if err := ipv4.NewPacketConn(c).SetMulticastInterface(ifi); err != nil {
				return err
			}
		}
		for _, p := range payloads {
			if _, err := c.WriteToUDPAddrPort(p, dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("send from %s: %v", ns.Name, err)
	}
}

// sendAll sends ms with x, in one SendBatch call that must take them all.
func sendAll(t testing.TB, x replica.Transport, ms []replica.Message) {
	t.Helper()
	n, err := x.SendBatch(ms)
	if err != nil || n != len(ms) {
		t.Fatalf("SendBatch(%d messages) = %d, %v", len(ms), n, err)
	}
}

// pollUntil calls cond every 5 ms until it holds or wait passes.
func pollUntil(cond func() bool) bool {
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// exec runs a command in ns or fails the test.
func exec(t testing.TB, ns *netns.NS, args ...string) string {
	t.Helper()
	out, err := ns.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// macOf returns the MAC address of ifname in ns.
func macOf(t testing.TB, ns *netns.NS, ifname string) (m pkt.MAC, index int) {
	t.Helper()
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		if len(ifi.HardwareAddr) != len(m) {
			return fmt.Errorf("%s: hardware address %v", ifname, ifi.HardwareAddr)
		}
		copy(m[:], ifi.HardwareAddr)
		index = ifi.Index
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, index
}

// errContains reports whether err's message contains every one of subs.
func errContains(err error, subs ...string) bool {
	if err == nil {
		return false
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			return false
		}
	}
	return true
}
