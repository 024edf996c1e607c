package transport_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

var interopSizes = []int{1, 2, 7, 8, 100, 1000, 1471, maxPayload}

// A kernel UDP socket sends to an AF_XDP transport: with TX checksum
// offload on, the frames cross the veth with a partial UDP checksum (the
// folded pseudo-header sum, CHECKSUM_PARTIAL), with it off with a full
// one; both are accepted. And an AF_XDP transport sends to a kernel UDP
// socket, which verifies the checksums the transport computed.
func TestKernelInterop(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	b := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 7601)})
	if b.LocalAddr() != netip.AddrPortFrom(p.BAddr, 7601) {
		t.Fatalf("LocalAddr %v", b.LocalAddr())
	}
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "tx-csum-on", false: "tx-csum-off"}[on]
		t.Run("kernel-to-xdp/"+name, func(t *testing.T) {
			if err := p.A.SetTxChecksum(p.AIf, on); err != nil {
				testenv.Skipf(t, "%v", err)
			}
			out := exec(t, p.A, "ethtool", "-k", p.AIf)
			want := map[bool]string{true: "tx-checksumming: on", false: "tx-checksumming: off"}[on]
			if !strings.Contains(out, want) {
				t.Fatalf("ethtool -k %s: no %q:\n%s", p.AIf, want, out)
			}
			capt := openCapture(t, p.A, p.AIf)
			before := stats(t, b)
			from := netip.AddrPortFrom(p.AAddr, 7602)
			var pls [][]byte
			for i, n := range interopSizes {
				pls = append(pls, payload(i, n))
			}
			sendKernel(t, p.A, from, b.LocalAddr(), "", pls...)
			got := recvN(t, b, len(pls), 2048)
			after := stats(t, b)
			if len(got) != len(pls) {
				t.Fatalf("received %d of %d datagrams; malformed %d (were %d)", len(got), len(pls), after.Malformed, before.Malformed)
			}
			for i, d := range got {
				if !bytes.Equal(d.data, pls[i]) || d.from != from {
					t.Errorf("datagram %d: %d bytes %x... from %v, want %d bytes %x... from %v",
						i, len(d.data), clip(d.data), d.from, len(pls[i]), clip(pls[i]), from)
				}
			}
			if after.Malformed != before.Malformed {
				t.Errorf("Malformed %d -> %d", before.Malformed, after.Malformed)
			}
			// The premise: what left A had the checksum form we meant.
			partial, full := capt.udpChecksumForms(t, from, b.LocalAddr(), len(pls))
			if on && partial == 0 || !on && full != len(pls) {
				t.Errorf("frames that left A: %d with a partial UDP checksum, %d with a full one (offload %v)", partial, full, on)
			}
			t.Logf("frames that left A: %d partial, %d full checksums", partial, full)
		})
	}
	t.Run("xdp-to-kernel", func(t *testing.T) {
		c := listenUDP(t, p.A, netip.AddrPortFrom(p.AAddr, 7603))
		dst := netip.AddrPortFrom(p.AAddr, 7603)
		var ms []replica.Message
		for i, n := range interopSizes {
			ms = append(ms, replica.Message{Buf: payload(i, n), Addr: dst})
		}
		sendAll(t, b, ms)
		for i, m := range ms {
			d := recvKernel(t, c)
			if !bytes.Equal(d.data, m.Buf) || d.from != b.LocalAddr() {
				t.Errorf("datagram %d: %d bytes %x... from %v, want %d bytes %x... from %v",
					i, len(d.data), clip(d.data), d.from, len(m.Buf), clip(m.Buf), b.LocalAddr())
			}
		}
	})
}

// Two AF_XDP receivers of a group, on two hosts of a bridged LAN, both get
// what a kernel UDP socket and an AF_XDP transport on a third host send to
// the group; their kernel sockets joined the group.
func TestMulticast(t *testing.T) {
	netns.Require(t)
	l := netns.NewLAN(t, 3)
	group := netip.MustParseAddr("239.255.0.9")
	const port = 7609
	gp := netip.AddrPortFrom(group, port)
	var rx []*transport.XDP
	for i := 1; i <= 2; i++ {
		x := openXDP(t, l.Hosts[i], transport.XDPConfig{Iface: l.Ifs[i], Bind: netip.AddrPortFrom(netip.Addr{}, port), Group: group})
		if x.LocalAddr() != netip.AddrPortFrom(l.Addrs[i], port) {
			t.Errorf("host %d: LocalAddr %v, want %v", i, x.LocalAddr(), netip.AddrPortFrom(l.Addrs[i], port))
		}
		out := exec(t, l.Hosts[i], "ip", "maddr", "show", "dev", l.Ifs[i])
		if !strings.Contains(out, "inet  "+group.String()) {
			t.Errorf("host %d: ip maddr show dev %s does not list %v:\n%s", i, l.Ifs[i], group, out)
		}
		rx = append(rx, x)
	}

	check := func(t *testing.T, want [][]byte, from netip.AddrPort) {
		t.Helper()
		for i, x := range rx {
			got := recvN(t, x, len(want), 2048)
			if len(got) != len(want) {
				t.Errorf("receiver on host %d: %d of %d datagrams; stats %+v", i+1, len(got), len(want), stats(t, x))
				continue
			}
			for j, d := range got {
				if !bytes.Equal(d.data, want[j]) || d.from != from {
					t.Errorf("receiver on host %d, datagram %d: %d bytes %x... from %v, want %d bytes from %v",
						i+1, j, len(d.data), clip(d.data), d.from, len(want[j]), from)
				}
			}
		}
	}

	t.Run("kernel-sender", func(t *testing.T) {
		from := netip.AddrPortFrom(l.Addrs[0], 7610)
		var pls [][]byte
		for i, n := range interopSizes {
			pls = append(pls, payload(i, n))
		}
		sendKernel(t, l.Hosts[0], from, gp, l.Ifs[0], pls...)
		check(t, pls, from)
	})
	t.Run("xdp-sender", func(t *testing.T) {
		tx := openXDP(t, l.Hosts[0], transport.XDPConfig{Iface: l.Ifs[0], Bind: netip.AddrPortFrom(l.Addrs[0], 0)})
		var ms []replica.Message
		var pls [][]byte
		for i, n := range interopSizes {
			pls = append(pls, payload(100+i, n))
			ms = append(ms, replica.Message{Buf: pls[i], Addr: gp})
		}
		sendAll(t, tx, ms)
		check(t, pls, tx.LocalAddr())
	})
	for i, x := range rx {
		st := stats(t, x)
		n := uint64(2 * len(interopSizes))
		if st.Received != n || st.Program.Redirected != n || st.Malformed != 0 {
			t.Errorf("receiver on host %d: Received %d, Redirected %d, Malformed %d; want %d, %d, 0",
				i+1, st.Received, st.Program.Redirected, st.Malformed, n, n)
		}
	}
}

// capture is an AF_PACKET socket seeing the frames an interface sends
// (outgoing frames reach ETH_P_ALL sockets only).
type capture struct{ fd int }

func openCapture(t *testing.T, ns *netns.NS, ifname string) *capture {
	t.Helper()
	_, index := macOf(t, ns, ifname)
	c := &capture{fd: -1}
	err := ns.Do(func() (err error) {
		c.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(c.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: index})
	})
	if err != nil {
		t.Fatalf("capture on %s: %v", ifname, err)
	}
	t.Cleanup(func() { unix.Close(c.fd) })
	return c
}

// udpChecksumForms reads up to n outgoing frames from src to dst (within
// wait) and counts those whose UDP checksum field holds the folded
// pseudo-header sum (CHECKSUM_PARTIAL, to be completed by the "hardware")
// and those with a complete, valid checksum.
func (c *capture) udpChecksumForms(t *testing.T, src, dst netip.AddrPort, n int) (partial, full int) {
	t.Helper()
	buf := make([]byte, 65536)
	deadline := time.Now().Add(wait)
	for partial+full < n && time.Now().Before(deadline) {
		k, from, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			continue // EAGAIN after SO_RCVTIMEO, EINTR
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); !ok || ll.Pkttype != unix.PACKET_OUTGOING {
			continue
		}
		f := buf[:k]
		if len(f) < pkt.HeaderLen || binary.BigEndian.Uint16(f[12:]) != pkt.EtherTypeIPv4 || f[pkt.EthLen+9] != 17 {
			continue
		}
		ip := f[pkt.EthLen:]
		ihl := int(ip[0]&0x0f) * 4
		totLen := int(binary.BigEndian.Uint16(ip[2:]))
		if totLen > len(ip) {
			continue
		}
		udp := ip[ihl:totLen]
		if [4]byte(ip[12:16]) != src.Addr().As4() || [4]byte(ip[16:20]) != dst.Addr().As4() ||
			binary.BigEndian.Uint16(udp[0:]) != src.Port() || binary.BigEndian.Uint16(udp[2:]) != dst.Port() {
			continue
		}
		var ph [12]byte
		copy(ph[0:8], ip[12:20])
		ph[9] = 17
		binary.BigEndian.PutUint16(ph[10:], uint16(len(udp)))
		pseudo := pkt.Sum(ph[:], 0)
		switch field := binary.BigEndian.Uint16(udp[6:]); {
		case pkt.Sum(udp, pseudo) == 0xffff:
			full++
		case field == pkt.Fold(pseudo):
			partial++
		default:
			t.Errorf("outgoing frame with UDP checksum %#04x: neither partial nor full", field)
			return
		}
	}
	return partial, full
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
