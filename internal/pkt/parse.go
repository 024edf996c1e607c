package pkt

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Packet is a parsed UDP datagram. Payload is a sub-slice of the parsed
// frame, not a copy: it is valid only as long as the frame is.
type Packet struct {
	Dst, Src         MAC
	VLAN             uint16 // VLAN ID of the tag, 0 if untagged
	SrcAddr, DstAddr netip.AddrPort
	TTL              uint8
	Payload          []byte
}

// Parse parses an Ethernet frame carrying an unfragmented IPv4/UDP datagram
// into p. It accepts an untagged frame or one 802.1Q/802.1ad tag, IP options
// (skipped) and trailing Ethernet padding (ignored). It verifies the IP
// header checksum and the UDP checksum as described in the package
// documentation. On error p is left partly written. Parse does not allocate
// unless it fails.
func Parse(frame []byte, p *Packet) error {
	off, err := parseEth(frame, p)
	if err != nil {
		return err
	}
	udp, err := parseIP(frame[off:], p)
	if err != nil {
		return err
	}
	return parseUDP(frame[off:], udp, p)
}

// parseEth reads the Ethernet header and optional tag into p and returns
// the offset of the IP header.
func parseEth(f []byte, p *Packet) (int, error) {
	if len(f) < EthLen+IPv4Len+UDPLen {
		return 0, fmt.Errorf("pkt: parse: %d-byte frame: %w", len(f), ErrShort)
	}
	copy(p.Dst[:], f[0:6])
	copy(p.Src[:], f[6:12])
	p.VLAN = 0
	off := 12
	et := binary.BigEndian.Uint16(f[off:])
	if et == EtherTypeVLAN || et == EtherTypeQinQ {
		if len(f) < MaxVLANHeaderLen {
			return 0, fmt.Errorf("pkt: parse: %d-byte tagged frame: %w", len(f), ErrShort)
		}
		p.VLAN = binary.BigEndian.Uint16(f[14:]) & 0x0fff
		off += VLANLen
		et = binary.BigEndian.Uint16(f[off:])
	}
	if et != EtherTypeIPv4 {
		return 0, fmt.Errorf("pkt: parse: EtherType %#04x: %w", et, ErrNotIPv4)
	}
	return off + 2, nil
}

// parseIP validates the IPv4 header at the start of b (which runs to the end
// of the frame) and returns the offset of the UDP header in b.
func parseIP(b []byte, p *Packet) (int, error) {
	if b[0]>>4 != 4 {
		return 0, fmt.Errorf("pkt: parse: IP version %d: %w", b[0]>>4, ErrNotIPv4)
	}
	ihl := int(b[0]&0x0f) * 4
	totLen := int(binary.BigEndian.Uint16(b[2:]))
	switch {
	case ihl < IPv4Len:
		return 0, fmt.Errorf("pkt: parse: IP header length %d: %w", ihl, ErrLength)
	case totLen < ihl+UDPLen:
		return 0, fmt.Errorf("pkt: parse: IP total length %d, header %d: %w", totLen, ihl, ErrLength)
	case totLen > len(b):
		return 0, fmt.Errorf("pkt: parse: IP total length %d > %d bytes left in frame: %w", totLen, len(b), ErrShort)
	}
	if s := Sum(b[:ihl], 0); s != 0xffff {
		return 0, fmt.Errorf("pkt: parse: IP header checksum %#04x: %w",
			binary.BigEndian.Uint16(b[10:]), ErrChecksum)
	}
	if frag := binary.BigEndian.Uint16(b[6:]); frag&(flagMF|fragOffsetMask) != 0 {
		return 0, fmt.Errorf("pkt: parse: flags/offset %#04x: %w", frag, ErrFragment)
	}
	if b[9] != protoUDP {
		return 0, fmt.Errorf("pkt: parse: IP protocol %d: %w", b[9], ErrNotUDP)
	}
	p.TTL = b[8]
	p.SrcAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), 0)
	p.DstAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[16:20])), 0)
	return ihl, nil
}

// parseUDP validates the UDP header at b[off:] and sets p's ports and
// payload. b starts at the IP header, whose total length is already known to
// fit.
func parseUDP(b []byte, off int, p *Packet) error {
	ipEnd := int(binary.BigEndian.Uint16(b[2:]))
	udp := b[off:ipEnd]
	udpLen := int(binary.BigEndian.Uint16(udp[4:]))
	if udpLen != len(udp) {
		return fmt.Errorf("pkt: parse: UDP length %d, IP payload %d: %w", udpLen, len(udp), ErrLength)
	}
	if err := checkUDP(b, udp); err != nil {
		return err
	}
	p.SrcAddr = netip.AddrPortFrom(p.SrcAddr.Addr(), binary.BigEndian.Uint16(udp[0:]))
	p.DstAddr = netip.AddrPortFrom(p.DstAddr.Addr(), binary.BigEndian.Uint16(udp[2:]))
	p.Payload = udp[UDPLen:]
	return nil
}

// checkUDP verifies the UDP checksum of udp; ip is the IP header. See the
// package documentation for the accepted forms.
func checkUDP(ip, udp []byte) error {
	field := binary.BigEndian.Uint16(udp[6:])
	if field == 0 {
		return nil
	}
	pseudo := pseudoSum([4]byte(ip[12:16]), [4]byte(ip[16:20]), len(udp))
	if Sum(udp, pseudo) == 0xffff {
		return nil
	}
	if field == Fold(pseudo) { // CHECKSUM_PARTIAL: folded pseudo-header, not inverted
		return nil
	}
	return fmt.Errorf("pkt: parse: UDP checksum %#04x: %w", field, ErrChecksum)
}
