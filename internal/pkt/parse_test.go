package pkt_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/ringfire/ringfire/internal/pkt"
)

// TestBitFlipsIPHeader flips every bit of the IP header (and UDP header) of
// a valid frame: each flip must be rejected or change the parse.
func TestBitFlips(t *testing.T) {
	for _, vlan := range []uint16{0, 9} {
		h := testHeader(vlan)
		orig := build(t, h, payloadOf(33), 77)
		var want pkt.Packet
		if err := pkt.Parse(orig, &want); err != nil {
			t.Fatal(err)
		}
		off := ipOff(h)
		for i := off; i < h.Len(); i++ { // IP and UDP headers
			for bit := range 8 {
				f := slices.Clone(orig)
				f[i] ^= 1 << bit
				var p pkt.Packet
				err := pkt.Parse(f, &p)
				if err == nil && samePacket(p, want) {
					t.Errorf("vlan %d: flip of byte %d bit %d accepted with the same parse", vlan, i-off, bit)
				}
				if i < off+pkt.IPv4Len && err == nil {
					t.Errorf("vlan %d: flip of IP header byte %d bit %d accepted", vlan, i-off, bit)
				}
			}
		}
	}
}

func TestParseRejects(t *testing.T) {
	h := testHeader(0)
	good := build(t, h, payloadOf(20), 1)
	const ip = pkt.EthLen
	mod := func(fn func(f []byte)) []byte {
		f := slices.Clone(good)
		fn(f)
		return f
	}
	refix := func(fn func(f []byte)) []byte {
		return mod(func(f []byte) { fn(f); fixIPChecksum(f, ip) })
	}
	for _, tc := range []struct {
		name string
		f    []byte
		want error
	}{
		{"empty", nil, pkt.ErrShort},
		{"41 bytes", good[:41], pkt.ErrShort},
		{"truncated payload", good[:len(good)-1], pkt.ErrShort},
		{"arp", mod(func(f []byte) { f[12], f[13] = 0x08, 0x06 }), pkt.ErrNotIPv4},
		{"ipv6 ethertype", mod(func(f []byte) { f[12], f[13] = 0x86, 0xdd }), pkt.ErrNotIPv4},
		{"version 6", refix(func(f []byte) { f[ip] = 0x65 }), pkt.ErrNotIPv4},
		{"ihl 4", refix(func(f []byte) { f[ip] = 0x44 }), pkt.ErrLength},
		{"total length < header+8", refix(func(f []byte) { f[ip+2], f[ip+3] = 0, 27 }), pkt.ErrLength},
		{"total length > frame", refix(func(f []byte) { f[ip+3]++ }), pkt.ErrShort},
		{"ip checksum", mod(func(f []byte) { f[ip+11]++ }), pkt.ErrChecksum},
		{"MF", refix(func(f []byte) { f[ip+6] |= 0x20 }), pkt.ErrFragment},
		{"offset", refix(func(f []byte) { f[ip+7] = 1 }), pkt.ErrFragment},
		{"tcp", refix(func(f []byte) { f[ip+9] = 6 }), pkt.ErrNotUDP},
		{"udp length short", mod(func(f []byte) { f[ip+25]-- }), pkt.ErrLength},
		{"udp length long", mod(func(f []byte) { f[ip+25]++ }), pkt.ErrLength},
		{"udp checksum", mod(func(f []byte) { f[ip+27]++ }), pkt.ErrChecksum},
		{"payload", mod(func(f []byte) { f[len(f)-1]++ }), pkt.ErrChecksum},
		{"double tag", tagged(tagged(good, 0x8100, 1), 0x88a8, 2), pkt.ErrNotIPv4},
		{"tagged short", tagged(good, 0x8100, 1)[:45], pkt.ErrShort},
	} {
		var p pkt.Packet
		if err := pkt.Parse(tc.f, &p); !errors.Is(err, tc.want) {
			t.Errorf("%s: Parse = %v, want %v", tc.name, err, tc.want)
		}
	}
	// Every truncation is refused.
	for n := range len(good) {
		var p pkt.Packet
		if err := pkt.Parse(good[:n], &p); err == nil {
			t.Errorf("truncated to %d bytes: accepted", n)
		}
	}
}

// tagged inserts a VLAN tag with the given TPID after the MAC addresses.
func tagged(f []byte, tpid, vid uint16) []byte {
	out := slices.Clone(f[:12])
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, vid)
	return append(out, f[12:]...)
}

func TestParseAccepts(t *testing.T) {
	h := testHeader(0)
	payload := payloadOf(20)
	good := build(t, h, payload, 1)
	want := pkt.Packet{Dst: h.Dst, Src: h.Src, SrcAddr: h.SrcAddr, DstAddr: h.DstAddr, TTL: h.TTL, Payload: payload}
	const ip = pkt.EthLen
	noCsum := slices.Clone(good)
	noCsum[ip+26], noCsum[ip+27] = 0, 0
	padded := append(slices.Clone(good), make([]byte, 18)...)
	padded[len(padded)-1] = 0xaa
	for _, tc := range []struct {
		name string
		f    []byte
		vlan uint16
	}{
		{"no udp checksum", noCsum, 0},
		{"ethernet padding", padded, 0},
		{"802.1Q with PCP", tagged(good, 0x8100, 0xe000|123), 123},
		{"802.1ad", tagged(good, 0x88a8, 4000), 4000},
		{"priority tag", tagged(good, 0x8100, 0x2000), 0},
		{"ip options", withOptions(good), 0},
		{"checksum partial", partial(good, ip), 0},
	} {
		var p pkt.Packet
		if err := pkt.Parse(tc.f, &p); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		w := want
		w.VLAN = tc.vlan
		if !samePacket(p, w) {
			t.Errorf("%s: got %+v, want %+v", tc.name, p, w)
		}
	}
}

// withOptions inserts 4 bytes of IP options (NOPs) into an untagged frame.
func withOptions(f []byte) []byte {
	const ip = pkt.EthLen
	out := slices.Clone(f[:ip+pkt.IPv4Len])
	out = append(out, 1, 1, 1, 1)
	out = append(out, f[ip+pkt.IPv4Len:]...)
	out[ip] = 0x46
	binary.BigEndian.PutUint16(out[ip+2:], binary.BigEndian.Uint16(f[ip+2:])+4)
	fixIPChecksum(out, ip)
	return out
}

// partial rewrites the UDP checksum of an untagged frame to the
// CHECKSUM_PARTIAL form: the folded pseudo-header sum, not inverted.
func partial(f []byte, ip int) []byte {
	out := slices.Clone(f)
	var ph [12]byte
	copy(ph[:8], out[ip+12:ip+20])
	ph[9] = 17
	copy(ph[10:], out[ip+24:ip+26]) // UDP length
	binary.BigEndian.PutUint16(out[ip+26:], uint16(pkt.Sum(ph[:], 0)))
	return out
}

func TestPartialCorrupted(t *testing.T) {
	const ip = pkt.EthLen
	f := partial(build(t, testHeader(0), payloadOf(50), 1), ip)
	var p pkt.Packet
	bad := slices.Clone(f)
	bad[ip+27] ^= 1
	if err := pkt.Parse(bad, &p); !errors.Is(err, pkt.ErrChecksum) {
		t.Errorf("partial with a flipped checksum bit: %v", err)
	}
	bad = slices.Clone(f)
	bad[ip+19]++ // another destination, IP checksum repaired
	fixIPChecksum(bad, ip)
	if err := pkt.Parse(bad, &p); !errors.Is(err, pkt.ErrChecksum) {
		t.Errorf("partial with another destination: %v", err)
	}
	// Documented limitation: the partial form does not cover the payload.
	bad = slices.Clone(f)
	bad[len(bad)-1]++
	if err := pkt.Parse(bad, &p); err != nil {
		t.Errorf("partial with a changed payload: %v (the payload is not covered)", err)
	}
}
