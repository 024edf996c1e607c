package pkt_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/ringfire/ringfire/internal/pkt"
)

func TestRoundTrip(t *testing.T) {
	for _, vlan := range []uint16{0, 1, 100, 4094} {
		h := testHeader(vlan)
		for n := 0; n <= 1472; n++ {
			payload := payloadOf(n)
			f := build(t, h, payload, uint16(n))
			var p pkt.Packet
			if err := pkt.Parse(f, &p); err != nil {
				t.Fatalf("vlan %d, %d bytes: Parse: %v", vlan, n, err)
			}
			want := pkt.Packet{Dst: h.Dst, Src: h.Src, VLAN: vlan, SrcAddr: h.SrcAddr,
				DstAddr: h.DstAddr, TTL: h.TTL, Payload: payload}
			if !samePacket(p, want) {
				t.Fatalf("vlan %d, %d bytes: got %+v, want %+v", vlan, n, p, want)
			}
			if n > 0 && &p.Payload[0] != &f[h.Len()] {
				t.Fatalf("Payload is not a sub-slice of the frame")
			}
		}
	}
}

func TestBuildFields(t *testing.T) {
	h := testHeader(0x123)
	h.TTL = 0
	f := build(t, h, []byte("hi"), 0xbeef)
	want := []byte{
		2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x01, 0x23, 0x08, 0x00,
		0x45, 0x10, 0, 30, 0xbe, 0xef, 0x40, 0x00, 64, 17, // checksum follows
	}
	if !bytes.Equal(f[:len(want)], want) {
		t.Fatalf("header\n got % x\nwant % x", f[:len(want)], want)
	}
	if got := f[30:34]; !bytes.Equal(got, []byte{10, 1, 2, 3}) {
		t.Errorf("src addr % x", got)
	}
	if binary.BigEndian.Uint16(f[42:]) != 30-20 || string(f[46:]) != "hi" {
		t.Errorf("udp % x", f[38:])
	}
}

func TestBuildErrors(t *testing.T) {
	h := testHeader(0)
	big := make([]byte, 70000)
	for _, tc := range []struct {
		name    string
		h       pkt.Header
		frame   int
		payload int
		want    error
	}{
		{"short buffer", h, 41 + 10, 10, pkt.ErrShortBuffer},
		{"too large", h, 70000, pkt.MaxPayload + 1, pkt.ErrTooLarge},
		{"v6 src", func() pkt.Header { h := h; h.SrcAddr = netip.MustParseAddrPort("[::1]:1"); return h }(), 100, 0, pkt.ErrNotIPv4},
		{"v4in6 dst", func() pkt.Header {
			h := h
			h.DstAddr = netip.MustParseAddrPort("[::ffff:10.0.0.1]:1")
			return h
		}(), 100, 0, pkt.ErrNotIPv4},
		{"zero dst", func() pkt.Header { h := h; h.DstAddr = netip.AddrPort{}; return h }(), 100, 0, pkt.ErrNotIPv4},
		{"vlan 4095", func() pkt.Header { h := h; h.VLAN = 4095; return h }(), 100, 0, pkt.ErrVLAN},
	} {
		_, err := tc.h.Build(big[:tc.frame], big[:tc.payload], 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := pkt.NewTemplate(tc.h); tc.want != pkt.ErrShortBuffer && tc.want != pkt.ErrTooLarge && !errors.Is(err, tc.want) {
			t.Errorf("%s: NewTemplate err = %v, want %v", tc.name, err, tc.want)
		}
	}
	tp, err := pkt.NewTemplate(h)
	if err != nil {
		t.Fatal(err)
	}
	if n := tp.Build(big[:51], big[:10], 0); n != 0 {
		t.Errorf("Template.Build into short frame = %d, want 0", n)
	}
	if n := tp.Build(big, big[:pkt.MaxPayload+1], 0); n != 0 {
		t.Errorf("Template.Build too large = %d, want 0", n)
	}
}

func TestMaxPayload(t *testing.T) {
	h := testHeader(7)
	payload := payloadOf(pkt.MaxPayload)
	f := build(t, h, payload, 1)
	var p pkt.Packet
	if err := pkt.Parse(f, &p); err != nil || len(p.Payload) != pkt.MaxPayload {
		t.Fatalf("Parse max: %v, %d bytes", err, len(p.Payload))
	}
	tp, _ := pkt.NewTemplate(h)
	g := make([]byte, len(f))
	if n := tp.Build(g, payload, 1); n != len(f) || !bytes.Equal(f, g) {
		t.Fatalf("Template.Build max differs (n=%d)", n)
	}
}

// TestChecksumNeverZero builds a datagram whose UDP checksum computes to 0
// and checks it is sent as 0xffff (and accepted).
func TestChecksumNeverZero(t *testing.T) {
	h := testHeader(0)
	f := build(t, h, []byte{0, 0}, 3)
	c := binary.BigEndian.Uint16(f[40:])
	// Payload word c makes the sum 0xffff, so the checksum would be 0.
	payload := []byte{byte(c >> 8), byte(c)}
	f = build(t, h, payload, 3)
	if got := binary.BigEndian.Uint16(f[40:]); got != 0xffff {
		t.Fatalf("UDP checksum = %#04x, want 0xffff", got)
	}
	tp, _ := pkt.NewTemplate(h)
	g := make([]byte, len(f))
	tp.Build(g, payload, 3)
	if !bytes.Equal(f, g) {
		t.Errorf("Template differs:\n% x\n% x", f, g)
	}
	var p pkt.Packet
	if err := pkt.Parse(f, &p); err != nil {
		t.Errorf("Parse: %v", err)
	}
}

func TestTemplateMatchesBuild(t *testing.T) {
	hs := []pkt.Header{testHeader(0), testHeader(42), {
		Dst: pkt.Broadcast, Src: pkt.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xfe},
		SrcAddr: netip.MustParseAddrPort("255.255.255.255:65535"),
		DstAddr: netip.MustParseAddrPort("255.255.255.254:65535"),
		TTL:     255, TOS: 0xff,
	}, {
		SrcAddr: netip.MustParseAddrPort("0.0.0.0:0"),
		DstAddr: netip.MustParseAddrPort("0.0.0.0:0"),
	}}
	frame := make([]byte, 70000)
	ref := make([]byte, 70000)
	for _, h := range hs {
		tp, err := pkt.NewTemplate(h)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Len() != h.Len() {
			t.Fatalf("Template.Len %d != Header.Len %d", tp.Len(), h.Len())
		}
		sizes := []int{1473, 2000, 8972, 9000, 30001, pkt.MaxPayload}
		for n := 0; n <= 1472; n++ {
			sizes = append(sizes, n)
		}
		for _, n := range sizes {
			payload := payloadOf(n)
			for _, id := range []uint16{0, 1, uint16(n), 0xffff} {
				want, err := h.Build(ref, payload, id)
				if err != nil {
					t.Fatal(err)
				}
				got := tp.Build(frame, payload, id)
				if got != want || !bytes.Equal(frame[:got], ref[:want]) {
					t.Fatalf("%+v, %d bytes, id %d: Template.Build differs\n got % x\nwant % x",
						h, n, id, frame[:min(got, 64)], ref[:min(want, 64)])
				}
			}
		}
	}
}

func TestMulticastMAC(t *testing.T) {
	for _, tc := range []struct{ group, want string }{
		{"239.255.77.1", "01:00:5e:7f:4d:01"},
		{"224.0.0.251", "01:00:5e:00:00:fb"},
		{"239.128.1.2", "01:00:5e:00:01:02"},
		{"::ffff:224.1.2.3", "01:00:5e:01:02:03"},
		{"ff02::1", "00:00:00:00:00:00"},
	} {
		if got := pkt.MulticastMAC(netip.MustParseAddr(tc.group)).String(); got != tc.want {
			t.Errorf("MulticastMAC(%s) = %s, want %s", tc.group, got, tc.want)
		}
	}
}

func TestAllocs(t *testing.T) {
	h := testHeader(5)
	payload := payloadOf(1000)
	frame := make([]byte, 1500)
	tp, _ := pkt.NewTemplate(h)
	var p pkt.Packet
	if _, err := h.Build(frame, payload, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"Header.Build", func() { _, _ = h.Build(frame, payload, 1) }},
		{"Template.Build", func() { tp.Build(frame, payload, 1) }},
		{"Parse", func() {
			if err := pkt.Parse(frame, &p); err != nil {
				panic(err)
			}
		}},
		{"Checksum", func() { _ = pkt.Checksum(frame, 0) }},
	} {
		if a := testing.AllocsPerRun(1000, tc.fn); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tc.name, a)
		}
	}
}
