package bpf

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

const waitFor = 5 * time.Second // bound for every wait on the kernel

// env is a veth pair with the program attached to B's end.
type env struct {
	*netns.Pair
	prog    *Program
	ifindex int // B's veth0
}

// newEnv loads the program and attaches it to B's veth0 in mode.
func newEnv(t *testing.T, mode Mode) *env {
	t.Helper()
	netns.Require(t)
	e := &env{Pair: netns.NewPair(t)}
	e.prog = load(t)
	e.ifindex = ifindex(t, e.B, e.BIf)
	if err := e.B.Do(func() error { return e.prog.Attach(e.ifindex, mode) }); err != nil {
		t.Fatal(err)
	}
	return e
}

func load(t *testing.T) *Program {
	t.Helper()
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func ifindex(t *testing.T, ns *netns.NS, name string) int {
	t.Helper()
	var idx int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return err
		}
		idx = ifi.Index
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func exec(t *testing.T, ns *netns.NS, args ...string) string {
	t.Helper()
	out, err := ns.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// xdpOn returns the XDP attachment `ip link show` reports for ifname: "xdp"
// (native), "xdpgeneric", or "" for none. The whole output is scanned:
// `ip netns exec` may print warnings of its own first.
func xdpOn(t *testing.T, ns *netns.NS, ifname string) string {
	t.Helper()
	out := exec(t, ns, "ip", "-o", "link", "show", "dev", ifname)
	for _, f := range strings.Fields(out) {
		// "xdp", "xdpgeneric"; older iproute2 prints "xdp/id:N".
		kind, _, _ := strings.Cut(f, "/")
		switch kind {
		case "xdp", "xdpgeneric", "xdpdrv", "xdpoffload", "xdpmulti":
			return kind
		}
	}
	if !strings.Contains(out, ifname) {
		t.Fatalf("ip link show %s: unexpected output %q", ifname, out)
	}
	return ""
}

// listen opens a kernel UDP socket in ns on addr.
func listen(t *testing.T, ns *netns.NS, addr netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	bigBuffer(t, c)
	return c
}

// bigBuffer gives c an 8 MiB receive buffer (SO_RCVBUFFORCE, root), so a
// slow reader under -race loses nothing.
func bigBuffer(t *testing.T, c *net.UDPConn) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	}); err != nil || serr != nil {
		t.Fatalf("SO_RCVBUFFORCE: %v %v", err, serr)
	}
}

// receiver counts datagrams arriving on c in the background.
type receiver struct {
	mu   sync.Mutex
	n    int
	last []byte
	done chan struct{}
}

func receive(t *testing.T, c *net.UDPConn) *receiver {
	r := &receiver{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		buf := make([]byte, 2048)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return // closed by cleanup
			}
			r.mu.Lock()
			r.n++
			r.last = append(r.last[:0], buf[:n]...)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-r.done
	})
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// waitCount waits until r has counted want datagrams, then a little longer
// to catch extra ones, and returns the final count.
func (r *receiver) waitCount(want int) int {
	deadline := time.Now().Add(waitFor)
	for r.count() < want && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	return r.count()
}

// send sends n datagrams "<tag> <i>" from ns to dst. It sends in bursts of
// 16 and waits for the program to see each burst, so the veth ring never
// overflows. A multicast dst goes out on ifname.
func send(t *testing.T, ns *netns.NS, ifname string, p *Program, dst netip.AddrPort, n int, tag string) {
	t.Helper()
	var c *net.UDPConn
	err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		if dst.Addr().IsMulticast() {
			return setMulticastIf(c, ifname)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	to := net.UDPAddrFromAddrPort(dst)
	for i := 0; i < n; {
		before := counters(t, p).Seen
		burst := min(16, n-i)
		for j := 0; j < burst; j++ {
			if _, err := c.WriteToUDP(fmt.Appendf(nil, "%s %d", tag, i+j), to); err != nil {
				t.Fatalf("send %d to %v: %v", i+j, dst, err)
			}
		}
		i += burst
		waitCounters(t, p, func(c Counters) bool { return c.Seen >= before+uint64(burst) })
	}
}

func counters(t *testing.T, p *Program) Counters {
	t.Helper()
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitCounters polls the counters until ok or waitFor passed (then fails).
func waitCounters(t *testing.T, p *Program, ok func(Counters) bool) Counters {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		c := counters(t, p)
		if ok(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("counters %+v: condition not met after %v", c, waitFor)
		}
		time.Sleep(time.Millisecond)
	}
}

// settled returns the counters once seen = redirected + passed + dropped
// (no packet half-counted), checking that invariant.
func settled(t *testing.T, p *Program) Counters {
	t.Helper()
	return waitCounters(t, p, func(c Counters) bool {
		return c.Seen == c.Redirected+c.Passed+c.Dropped && c.NoSocket <= c.Passed
	})
}

// ping sends count ICMP echo requests from ns to addr over a raw socket
// and fails unless every one is answered.
func ping(t *testing.T, ns *netns.NS, addr netip.Addr, count int) {
	t.Helper()
	var c *icmp.PacketConn
	err := ns.Do(func() (err error) {
		c, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := os.Getpid() & 0xffff
	buf := make([]byte, 1500)
	for seq := 1; seq <= count; seq++ {
		req := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("bpf test")}}
		b, err := req.Marshal(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WriteTo(b, &net.IPAddr{IP: addr.AsSlice()}); err != nil {
			t.Fatalf("ping %v: %v", addr, err)
		}
		if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
			t.Fatal(err)
		}
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				t.Fatalf("ping %v seq %d: no reply: %v", addr, seq, err)
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq && from.String() == addr.String() {
				break
			}
		}
	}
}

func isErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("error %v, want %v", err, want)
	}
}

func setMulticastIf(c *net.UDPConn, ifname string) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	return ipv4.NewPacketConn(c).SetMulticastInterface(ifi)
}

func joinGroup(c *net.UDPConn, ifname string, group net.IP) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	return ipv4.NewPacketConn(c).JoinGroup(ifi, &net.UDPAddr{IP: group})
}
