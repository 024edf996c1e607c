package delayline

import "encoding/binary"

// The frames the line tells apart: Ethernet II, IPv4, UDP, and in the
// UDP payload the replication protocol's 16-byte header (kind u8 @0,
// count u16 @2, seq u64 @8; replica/wire). Bench code: the layout is
// read here rather than imported, so that a frame that merely looks like
// one is only ever dropped, never trusted.
const (
	ethLen    = 14
	ethIPv4   = 0x0800
	protoUDP  = 17
	udpLen    = 8
	wireHdr   = 16
	kindData  = 3
	minIPv4   = 20
	fragMask  = 0x3fff // more-fragments flag and offset
	portAnyOK = 0
)

// dataFrame reports whether f is a UDP datagram to port (any port when 0)
// carrying a DATA frame, and the frame's first sequence and record count.
func dataFrame(f []byte, port uint16) (seq uint64, count uint16, ok bool) {
	if len(f) < ethLen+minIPv4 || binary.BigEndian.Uint16(f[12:]) != ethIPv4 {
		return 0, 0, false
	}
	ip := f[ethLen:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < minIPv4 || ip[9] != protoUDP || binary.BigEndian.Uint16(ip[6:])&fragMask != 0 {
		return 0, 0, false
	}
	if len(ip) < ihl+udpLen+wireHdr {
		return 0, 0, false
	}
	udp := ip[ihl:]
	if port != portAnyOK && binary.BigEndian.Uint16(udp[2:]) != port {
		return 0, 0, false
	}
	w := udp[udpLen:]
	if w[0] != kindData {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(w[8:]), binary.LittleEndian.Uint16(w[2:]), true
}
