package pkt

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Header sizes in bytes.
const (
	EthLen           = 14
	VLANLen          = 4
	IPv4Len          = 20
	UDPLen           = 8
	HeaderLen        = EthLen + IPv4Len + UDPLen // 42
	MaxVLANHeaderLen = HeaderLen + VLANLen       // 46

	// MaxPayload is the largest UDP payload an IPv4 datagram can carry.
	MaxPayload = 0xffff - IPv4Len - UDPLen // 65507
)

// EtherTypes and IP constants used on the wire.
const (
	EtherTypeIPv4  = 0x0800
	EtherTypeVLAN  = 0x8100 // 802.1Q C-tag
	EtherTypeQinQ  = 0x88a8 // 802.1ad S-tag
	protoUDP       = 17
	flagDF         = 0x4000
	flagMF         = 0x2000
	fragOffsetMask = 0x1fff
	defaultTTL     = 64
	maxVID         = 4094
)

// Header is what Build writes in front of a payload.
type Header struct {
	Dst, Src         MAC
	VLAN             uint16         // 0: untagged; else an 802.1Q tag with this VID, PCP 0
	SrcAddr, DstAddr netip.AddrPort // IPv4 only
	TTL              uint8          // 0 means 64
	TOS              uint8
}

// Len returns the number of header bytes Build writes: 42, or 46 with a VLAN
// tag.
func (h *Header) Len() int {
	if h.VLAN != 0 {
		return MaxVLANHeaderLen
	}
	return HeaderLen
}

// check validates the header fields that Build cannot encode.
func (h *Header) check() error {
	if !h.SrcAddr.Addr().Is4() || !h.DstAddr.Addr().Is4() {
		return fmt.Errorf("pkt: header %v -> %v: %w", h.SrcAddr, h.DstAddr, ErrNotIPv4)
	}
	if h.VLAN > maxVID {
		return fmt.Errorf("pkt: header VLAN %d: %w", h.VLAN, ErrVLAN)
	}
	return nil
}

// Build writes the Ethernet, optional VLAN, IPv4 and UDP headers for payload
// into frame, copies payload after them and returns the frame length. id is
// the IP identification. The IPv4 header checksum and the full UDP checksum
// are computed; DF is set. Build does not allocate.
func (h *Header) Build(frame, payload []byte, id uint16) (int, error) {
	if err := h.check(); err != nil {
		return 0, err
	}
	if len(payload) > MaxPayload {
		return 0, fmt.Errorf("pkt: build: payload %d > %d bytes: %w", len(payload), MaxPayload, ErrTooLarge)
	}
	hl := h.Len()
	n := hl + len(payload)
	if len(frame) < n {
		return 0, fmt.Errorf("pkt: build: frame %d < %d bytes: %w", len(frame), n, ErrShortBuffer)
	}
	off := h.writeEth(frame)
	ip := frame[off : off+IPv4Len]
	h.writeIP(ip, len(payload), id)
	binary.BigEndian.PutUint16(ip[10:], Checksum(ip, 0))
	udp := frame[off+IPv4Len : n]
	h.writeUDP(udp, len(payload))
	copy(udp[UDPLen:], payload)
	sum := pseudoSum(h.SrcAddr.Addr().As4(), h.DstAddr.Addr().As4(), len(udp))
	binary.BigEndian.PutUint16(udp[6:], udpChecksum(Sum(udp, sum)))
	return n, nil
}

// udpChecksum inverts a folded sum for the UDP checksum field, sending a
// computed 0 as 0xffff (0 means "no checksum").
func udpChecksum(sum uint32) uint16 {
	c := ^uint16(sum)
	if c == 0 {
		return 0xffff
	}
	return c
}

// writeEth writes the Ethernet header and optional tag; it returns their
// length.
func (h *Header) writeEth(f []byte) int {
	copy(f[0:6], h.Dst[:])
	copy(f[6:12], h.Src[:])
	off := 12
	if h.VLAN != 0 {
		binary.BigEndian.PutUint16(f[12:], EtherTypeVLAN)
		binary.BigEndian.PutUint16(f[14:], h.VLAN) // PCP 0, DEI 0
		off += VLANLen
	}
	binary.BigEndian.PutUint16(f[off:], EtherTypeIPv4)
	return off + 2
}

// writeIP writes a 20-byte IPv4 header with a zero checksum field.
func (h *Header) writeIP(ip []byte, payloadLen int, id uint16) {
	ttl := h.TTL
	if ttl == 0 {
		ttl = defaultTTL
	}
	ip[0] = 0x45
	ip[1] = h.TOS
	binary.BigEndian.PutUint16(ip[2:], uint16(IPv4Len+UDPLen+payloadLen))
	binary.BigEndian.PutUint16(ip[4:], id)
	binary.BigEndian.PutUint16(ip[6:], flagDF)
	ip[8] = ttl
	ip[9] = protoUDP
	ip[10], ip[11] = 0, 0
	src, dst := h.SrcAddr.Addr().As4(), h.DstAddr.Addr().As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
}

// writeUDP writes the 8-byte UDP header with a zero checksum field.
func (h *Header) writeUDP(udp []byte, payloadLen int) {
	binary.BigEndian.PutUint16(udp[0:], h.SrcAddr.Port())
	binary.BigEndian.PutUint16(udp[2:], h.DstAddr.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(UDPLen+payloadLen))
	udp[6], udp[7] = 0, 0
}
