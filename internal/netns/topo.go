package netns

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const readyTimeout = 5 * time.Second // bound for links to become usable

// Pair is two namespaces joined by a veth pair.
type Pair struct {
	A, B         *NS
	AIf, BIf     string     // veth end in A and in B ("veth0")
	AAddr, BAddr netip.Addr // 10.77.<k>.1 and 10.77.<k>.2, /24

	links int // veth pairs added by AddLink
}

// NewPair creates two namespaces joined by a veth pair with addresses
// 10.77.<k>.1/24 (A) and 10.77.<k>.2/24 (B), links and lo up, MTU 1500.
// k counts NewPair/NewLAN calls in this process (mod 256); the addresses
// exist only inside the pair, so a wrapped k cannot clash with anything.
// Both namespaces are deleted by t.Cleanup. It fails the test on error.
func NewPair(t testing.TB) *Pair {
	t.Helper()
	p, err := newPair(t)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newPair(t owner) (*Pair, error) {
	sweep()
	k := next()
	p := &Pair{
		AIf: "veth0", BIf: "veth0",
		AAddr: netip.AddrFrom4([4]byte{10, 77, byte(k), 1}),
		BAddr: netip.AddrFrom4([4]byte{10, 77, byte(k), 2}),
	}
	var err error
	if p.A, err = newNS(t, fmt.Sprintf("%da", k)); err != nil {
		return nil, err
	}
	if p.B, err = newNS(t, fmt.Sprintf("%db", k)); err != nil {
		return nil, err
	}
	if err := veth(p.A, p.AIf, p.B, p.BIf); err != nil {
		return nil, err
	}
	for _, e := range []struct {
		ns   *NS
		ifn  string
		addr netip.Addr
	}{{p.A, p.AIf, p.AAddr}, {p.B, p.BIf, p.BAddr}} {
		if err := batch(e.ns,
			fmt.Sprintf("addr add %s/24 dev %s", e.addr, e.ifn),
			"link set lo up",
			"link set "+e.ifn+" up"); err != nil {
			return nil, err
		}
	}
	for _, e := range []struct {
		ns  *NS
		ifn string
	}{{p.A, p.AIf}, {p.B, p.BIf}} {
		if err := waitReady(e.ns, e.ifn); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// LAN is n host namespaces, each with a veth into a bridge that lives in its
// own namespace.
type LAN struct {
	Bridge *NS          // holds br0 and the bridge-side ports p0..p<n-1>
	Hosts  []*NS        // host i
	Ifs    []string     // host i's veth ("veth0")
	Addrs  []netip.Addr // host i's address 10.78.<k>.<i+1>, /24
}

// NewLAN creates a bridged LAN of n hosts with addresses 10.78.<k>.<i+1>/24.
// The bridge has multicast_snooping 0, so multicast floods to every port, and
// each host routes 224.0.0.0/4 via its veth. All namespaces are deleted by
// t.Cleanup. It fails the test on error.
func NewLAN(t testing.TB, n int) *LAN {
	t.Helper()
	l, err := newLAN(t, n)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newLAN(t owner, n int) (*LAN, error) {
	if n < 1 || n > 253 {
		return nil, fmt.Errorf("netns: NewLAN: n = %d, want 1..253", n)
	}
	sweep()
	k := next()
	l := &LAN{}
	var err error
	if l.Bridge, err = newNS(t, fmt.Sprintf("%dbr", k)); err != nil {
		return nil, err
	}
	brCmds := []string{
		"link add br0 type bridge mcast_snooping 0 stp_state 0 forward_delay 0",
		"link set lo up",
		"link set br0 up",
	}
	for i := 0; i < n; i++ {
		h, err := newNS(t, fmt.Sprintf("%dh%d", k, i))
		if err != nil {
			return nil, err
		}
		port := fmt.Sprintf("p%d", i)
		if err := veth(l.Bridge, port, h, "veth0"); err != nil {
			return nil, err
		}
		brCmds = append(brCmds, "link set "+port+" master br0", "link set "+port+" up")
		l.Hosts = append(l.Hosts, h)
		l.Ifs = append(l.Ifs, "veth0")
		l.Addrs = append(l.Addrs, netip.AddrFrom4([4]byte{10, 78, byte(k), byte(i + 1)}))
	}
	// Ports go up before the hosts' ends: a port that gains carrier after
	// going up is handled by the kernel at once, so the bridge starts
	// forwarding in milliseconds instead of after the ~1 s operstate batch.
	if err := batch(l.Bridge, brCmds...); err != nil {
		return nil, err
	}
	for i, h := range l.Hosts {
		if err := batch(h,
			fmt.Sprintf("addr add %s/24 dev %s", l.Addrs[i], l.Ifs[i]),
			"link set lo up",
			"link set "+l.Ifs[i]+" up",
			"route add 224.0.0.0/4 dev "+l.Ifs[i]); err != nil {
			return nil, err
		}
	}
	for i, h := range l.Hosts {
		if err := waitReady(h, l.Ifs[i]); err != nil {
			return nil, err
		}
	}
	if err := waitForwarding(l.Bridge, n); err != nil {
		return nil, err
	}
	return l, nil
}

// veth creates a veth pair with one end (named an) directly in a and the
// other (bn) directly in b; nothing is ever created in the root namespace.
func veth(a *NS, an string, b *NS, bn string) error {
	return ip("", "link", "add", an, "netns", a.Name, "mtu", "1500",
		"type", "veth", "peer", "name", bn, "netns", b.Name, "mtu", "1500")
}

// batch runs ip commands inside ns with one `ip -n <ns> -batch -`.
func batch(ns *NS, cmds ...string) error {
	return ip(strings.Join(cmds, "\n")+"\n", "-n", ns.Name, "-batch", "-")
}

// waitReady waits until ifname in ns is up, has carrier (IFF_LOWER_UP) and
// has its real qdisc attached (not "noop", which drops every packet). Unlike
// IFF_RUNNING this does not wait for the kernel's batched (up to 1 s)
// operstate update, which is all the peer brought up last would wait for.
func waitReady(ns *NS, ifname string) error {
	return ns.Do(func() error {
		deadline := time.Now().Add(readyTimeout)
		for {
			flags, qdisc, err := linkState(ifname)
			if err == nil && flags&unix.IFF_UP != 0 && flags&unix.IFF_LOWER_UP != 0 && qdisc != "" && qdisc != "noop" {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("netns: %s in %s not ready after %v (flags %#x, qdisc %q, err %v)",
					ifname, ns.Name, readyTimeout, flags, qdisc, err)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// linkState returns the flags and qdisc of ifname in the calling thread's
// namespace, read with an RTM_GETLINK dump.
func linkState(ifname string) (flags uint32, qdisc string, err error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return 0, "", err
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return 0, "", err
	}
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWLINK || len(m.Data) < syscall.SizeofIfInfomsg {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return 0, "", err
		}
		var name string
		for _, a := range attrs {
			switch a.Attr.Type {
			case syscall.IFLA_IFNAME:
				name = strings.TrimRight(string(a.Value), "\x00")
			case syscall.IFLA_QDISC:
				qdisc = strings.TrimRight(string(a.Value), "\x00")
			}
		}
		if name == ifname {
			// struct ifinfomsg: family, pad, type u16, index i32, flags u32
			return binary.NativeEndian.Uint32(m.Data[8:12]), qdisc, nil
		}
		qdisc = ""
	}
	return 0, "", fmt.Errorf("no link %q", ifname)
}

// waitForwarding waits until n bridge ports in ns are in forwarding state.
func waitForwarding(ns *NS, n int) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		out, err := exec.CommandContext(ctx, "bridge", "-n", ns.Name, "link", "show").CombinedOutput()
		cancel()
		if err == nil && strings.Count(string(out), "state forwarding") >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: bridge ports in %s not forwarding after %v: bridge -n %s link show: %v: %s", ns.Name, readyTimeout, ns.Name, err, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
