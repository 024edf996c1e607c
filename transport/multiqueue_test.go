package transport_test

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// On a veth with two RX queues the transport opens a socket per queue, and
// datagrams of many flows, which the sending veth spreads over both
// queues, all arrive.
func TestMultiQueue(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	// Re-create the pair's veth with two queues each way, same names and
	// addresses (deleting one end deletes both).
	exec(t, p.A, "ip", "link", "del", p.AIf)
	exec(t, p.A, "ip", "link", "add", p.AIf, "mtu", "1500", "numtxqueues", "2", "numrxqueues", "2", "type", "veth",
		"peer", "name", p.BIf, "netns", p.B.Name, "mtu", "1500", "numtxqueues", "2", "numrxqueues", "2")
	for _, e := range []struct {
		ns   *netns.NS
		ifn  string
		addr netip.Addr
	}{{p.A, p.AIf, p.AAddr}, {p.B, p.BIf, p.BAddr}} {
		exec(t, e.ns, "ip", "addr", "add", e.addr.String()+"/24", "dev", e.ifn)
		exec(t, e.ns, "ip", "link", "set", e.ifn, "up")
	}
	for _, e := range []struct {
		ns  *netns.NS
		ifn string
	}{{p.A, p.AIf}, {p.B, p.BIf}} {
		var out string
		if !pollUntil(func() bool {
			out, _ = e.ns.Exec("ip", "link", "show", "dev", e.ifn)
			return strings.Contains(out, "LOWER_UP") && strings.Contains(out, "state UP") && !strings.Contains(out, "qdisc noop")
		}) {
			t.Fatalf("%s in %s not ready:\n%s", e.ifn, e.ns.Name, out)
		}
	}
	out := exec(t, p.B, "ethtool", "-l", p.BIf)
	if cur := channels(out, "Current hardware settings"); cur["RX"] != 2 {
		t.Fatalf("ethtool -l %s: current RX channels %v, want 2:\n%s", p.BIf, cur, out)
	}

	const port = 7650
	x := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, port)})
	st := stats(t, x)
	if st.Sockets != 2 {
		t.Fatalf("Sockets = %d on a veth with 2 RX queues, want 2", st.Sockets)
	}
	t.Logf("attach %s, %d sockets", st.Attach, st.Sockets)

	const flows, per = 64, 4
	var want []string
	for f := range flows {
		from := netip.AddrPortFrom(p.AAddr, uint16(7700+f))
		var pls [][]byte
		for i := range per {
			s := fmt.Sprintf("flow %d datagram %d", f, i)
			pls = append(pls, []byte(s))
			want = append(want, s)
		}
		sendKernel(t, p.A, from, x.LocalAddr(), "", pls...)
	}
	got := recvN(t, x, len(want), 2048)
	seen := map[string]int{}
	for _, d := range got {
		seen[string(d.data)]++
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Errorf("%q arrived %d times", w, seen[w])
		}
	}
	st = stats(t, x)
	if st.Program.NoSocket != 0 || st.Program.Redirected != uint64(len(want)) || st.Received != uint64(len(want)) {
		t.Errorf("program %+v, Received %d; want %d redirected and received, none without a socket", st.Program, st.Received, len(want))
	}
	// Which queues the frames came in on, where veth says.
	if out, err := p.B.Exec("ethtool", "-S", p.BIf); err == nil {
		q := queueXDP(out)
		t.Logf("per-queue XDP packets at B: %v", q)
		if len(q) == 2 && (q[0] == 0 || q[1] == 0) {
			t.Errorf("all %d flows came in on one queue (%v): the second socket was not exercised", flows, q)
		}
	}

	// Sending still works (through queue 0's socket).
	c := listenUDP(t, p.A, netip.AddrPortFrom(p.AAddr, 7651))
	sendAll(t, x, []replica.Message{{Buf: []byte("from a two-queue veth"), Addr: netip.AddrPortFrom(p.AAddr, 7651)}})
	if d := recvKernel(t, c); string(d.data) != "from a two-queue veth" || d.from != x.LocalAddr() {
		t.Fatalf("got %q from %v", d.data, d.from)
	}
}

// channels parses a section of `ethtool -l` output ("RX:\t\t2").
func channels(out, section string) map[string]int {
	m := map[string]int{}
	_, rest, ok := strings.Cut(out, section)
	if !ok {
		return m
	}
	for _, line := range strings.Split(rest, "\n")[1:] {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			break
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			m[strings.TrimSpace(k)] = n
		}
	}
	return m
}

var rxQueueXDP = regexp.MustCompile(`rx_queue_(\d+)_xdp_packets:\s*(\d+)`)

// queueXDP returns veth's per-RX-queue XDP packet counts from `ethtool -S`.
func queueXDP(out string) map[int]uint64 {
	m := map[int]uint64{}
	for _, s := range rxQueueXDP.FindAllStringSubmatch(out, -1) {
		q, _ := strconv.Atoi(s[1])
		n, _ := strconv.ParseUint(s[2], 10, 64)
		m[q] = n
	}
	return m
}
