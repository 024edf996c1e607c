package pkt_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/ringfire/ringfire/internal/pkt"
)

func testHeader(vlan uint16) pkt.Header {
	return pkt.Header{
		Dst:     pkt.MAC{0x02, 0, 0, 0, 0, 0x02},
		Src:     pkt.MAC{0x02, 0, 0, 0, 0, 0x01},
		VLAN:    vlan,
		SrcAddr: netip.MustParseAddrPort("10.1.2.3:40000"),
		DstAddr: netip.MustParseAddrPort("10.4.5.6:7000"),
		TTL:     9,
		TOS:     0x10,
	}
}

func payloadOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + 7)
	}
	return b
}

// build runs Header.Build into a fresh frame, failing the test on error.
func build(t testing.TB, h pkt.Header, payload []byte, id uint16) []byte {
	t.Helper()
	f := make([]byte, h.Len()+len(payload))
	n, err := h.Build(f, payload, id)
	if err != nil || n != len(f) {
		t.Fatalf("Build(%d bytes) = %d, %v; want %d", len(payload), n, err, len(f))
	}
	return f
}

// samePacket compares everything Parse reports except Payload's identity.
func samePacket(a, b pkt.Packet) bool {
	return a.Dst == b.Dst && a.Src == b.Src && a.VLAN == b.VLAN &&
		a.SrcAddr == b.SrcAddr && a.DstAddr == b.DstAddr && a.TTL == b.TTL &&
		bytes.Equal(a.Payload, b.Payload)
}

// ipOff returns the offset of the IP header in a frame built by Build.
func ipOff(h pkt.Header) int { return h.Len() - pkt.IPv4Len - pkt.UDPLen }

// fixIPChecksum recomputes the IP header checksum of f in place.
func fixIPChecksum(f []byte, off int) {
	ihl := int(f[off]&0x0f) * 4
	f[off+10], f[off+11] = 0, 0
	c := pkt.Checksum(f[off:off+ihl], 0)
	f[off+10], f[off+11] = byte(c>>8), byte(c)
}
