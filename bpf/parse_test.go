package bpf

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// rawFrame describes a hand-built Ethernet/IPv4 frame.
type rawFrame struct {
	tags    []uint16 // TPIDs of the VLAN tags, outermost first (VID 5, 6, ...)
	ihl     int      // IPv4 header length in 32-bit words (options are NOPs)
	proto   byte     // IP protocol
	frag    uint16   // flags and fragment offset (host order)
	dst     netip.AddrPort
	payload string
	cut     int // drop this many bytes from the end (truncated frame)
}

func (r rawFrame) build(dstMAC, srcMAC net.HardwareAddr, src netip.Addr) []byte {
	b := append([]byte(nil), dstMAC...)
	b = append(b, srcMAC...)
	for i, tpid := range r.tags {
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = binary.BigEndian.AppendUint16(b, uint16(5+i))
	}
	b = binary.BigEndian.AppendUint16(b, 0x0800)
	ip := make([]byte, max(r.ihl, 5)*4)
	if r.ihl < 5 {
		ip = ip[:20]
	}
	for i := 20; i < len(ip); i++ {
		ip[i] = 1 // NOP option
	}
	udpLen := 8 + len(r.payload)
	ip[0] = 0x40 | byte(r.ihl)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+udpLen))
	binary.BigEndian.PutUint16(ip[6:], r.frag)
	ip[8], ip[9] = 64, r.proto
	s4, d4 := src.As4(), r.dst.Addr().As4()
	copy(ip[12:], s4[:])
	copy(ip[16:], d4[:])
	var sum uint32
	for i := 0; i < len(ip); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	b = append(b, ip...)
	b = binary.BigEndian.AppendUint16(b, 40000)
	b = binary.BigEndian.AppendUint16(b, r.dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
	b = binary.BigEndian.AppendUint16(b, 0) // no UDP checksum
	b = append(b, r.payload...)
	return b[:len(b)-r.cut]
}

// TestSteerParse sends hand-built frames from A with an AF_PACKET socket
// and checks, frame by frame, which ones the program steers.
func TestSteerParse(t *testing.T) {
	for _, mode := range []Mode{ModeNative, ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			testParse(t, mode)
		})
	}
}

func testParse(t *testing.T, mode Mode) {
	e := newEnv(t, mode)
	flow := netip.AddrPortFrom(e.BAddr, 7700)
	other := netip.AddrPortFrom(e.BAddr, 7701)
	if err := e.prog.AddFlow(Flow{flow.Addr(), flow.Port()}); err != nil {
		t.Fatal(err)
	}
	xsks := openXSKs(t, e)
	var dstMAC, srcMAC net.HardwareAddr
	if err := e.B.Do(func() error {
		ifi, err := net.InterfaceByName(e.BIf)
		dstMAC = ifi.HardwareAddr
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var fd, aIndex int
	if err := e.A.Do(func() (err error) {
		ifi, err := net.InterfaceByName(e.AIf)
		if err != nil {
			return err
		}
		srcMAC, aIndex = ifi.HardwareAddr, ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // send only
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	const q, ad = 0x8100, 0x88a8
	for _, tc := range []struct {
		name  string
		f     rawFrame
		steer bool
		vlan  int
	}{
		{"plain", rawFrame{ihl: 5, proto: 17, dst: flow}, true, -1},
		{"802.1Q", rawFrame{tags: []uint16{q}, ihl: 5, proto: 17, dst: flow}, true, 5},
		{"802.1ad", rawFrame{tags: []uint16{ad}, ihl: 5, proto: 17, dst: flow}, true, 5},
		{"QinQ", rawFrame{tags: []uint16{ad, q}, ihl: 5, proto: 17, dst: flow}, false, 0},
		{"options", rawFrame{ihl: 6, proto: 17, dst: flow}, true, -1},
		{"options-max-802.1Q", rawFrame{tags: []uint16{q}, ihl: 15, proto: 17, dst: flow}, true, 5},
		{"first-fragment", rawFrame{ihl: 5, proto: 17, frag: 0x2000, dst: flow}, true, -1},
		{"later-fragment", rawFrame{ihl: 5, proto: 17, frag: 0x0003, dst: flow}, false, 0},
		{"df", rawFrame{ihl: 5, proto: 17, frag: 0x4000, dst: flow}, true, -1},
		{"other-port-802.1Q", rawFrame{tags: []uint16{q}, ihl: 5, proto: 17, dst: other}, false, 0},
		{"tcp", rawFrame{ihl: 5, proto: 6, dst: flow}, false, 0},
		{"ihl-4", rawFrame{ihl: 4, proto: 17, dst: flow}, false, 0},
		{"truncated-udp", rawFrame{ihl: 5, proto: 17, dst: flow, cut: 7}, false, 0},
		{"truncated-options", rawFrame{ihl: 15, proto: 17, dst: flow, cut: 45}, false, 0},
	} {
		tc.f.payload = "parse " + tc.name
		if tc.f.cut > 0 {
			tc.f.cut += len(tc.f.payload)
		}
		b := tc.f.build(dstMAC, srcMAC, e.AAddr)
		before := settled(t, e.prog)
		if err := unix.Sendto(fd, b, 0, &unix.SockaddrLinklayer{Ifindex: aIndex}); err != nil {
			t.Fatalf("%s: sendto: %v", tc.name, err)
		}
		waitCounters(t, e.prog, func(c Counters) bool { return c.Seen > before.Seen })
		d := settled(t, e.prog).sub(before)
		n := 0
		if tc.steer {
			n = 1
		}
		got := xsks.recv(t, n)
		switch {
		case tc.steer && (d.Redirected != 1 || len(got) != 1):
			t.Errorf("%s: not steered: delta %+v, %d frames at the XSK", tc.name, d, len(got))
		case !tc.steer && (d.Redirected != 0 || d.Passed < 1 || len(got) != 0):
			t.Errorf("%s: not passed: delta %+v, %d frames at the XSK", tc.name, d, len(got))
		case tc.steer && (got[0].payload != tc.f.payload || got[0].vlan != tc.vlan || got[0].dport != flow.Port()):
			t.Errorf("%s: XSK frame %+v", tc.name, got[0])
		}
		if t.Failed() {
			t.Logf("%s: frame % x", tc.name, b)
		}
	}
}
