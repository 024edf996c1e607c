package pkt

import "encoding/binary"

// Template is the precomputed header of one fixed flow (a Header). Its Build
// copies the header bytes and patches the lengths, the IP identification and
// both checksums from precomputed partial sums, producing exactly the bytes
// Header.Build produces. A Template is read-only after NewTemplate and may
// be used from many goroutines.
type Template struct {
	hdr    [MaxVLANHeaderLen]byte
	hl     int    // header length, 42 or 46
	ipOff  int    // offset of the IP header
	ipSum  uint32 // sum of the IP header without length, id and checksum
	udpSum uint32 // pseudo-header (without length) + ports
}

// NewTemplate validates h and precomputes its header.
func NewTemplate(h Header) (*Template, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	t := &Template{hl: h.Len()}
	t.ipOff = h.writeEth(t.hdr[:])
	ip := t.hdr[t.ipOff : t.ipOff+IPv4Len]
	h.writeIP(ip, 0, 0)
	binary.BigEndian.PutUint16(ip[2:], 0) // length: patched per packet
	t.ipSum = Sum(ip, 0)
	udp := t.hdr[t.ipOff+IPv4Len : t.hl]
	h.writeUDP(udp, 0)
	binary.BigEndian.PutUint16(udp[4:], 0)
	// The pseudo-header with length 0; the UDP length is added twice per
	// packet (once for the pseudo-header, once for the length field).
	t.udpSum = Sum(udp, pseudoSum(h.SrcAddr.Addr().As4(), h.DstAddr.Addr().As4(), 0))
	return t, nil
}

// Len returns the header length, 42 or 46.
func (t *Template) Len() int { return t.hl }

// Build writes the template's headers and payload into frame with IP
// identification id and returns the frame length. It returns 0, writing
// nothing, when payload is larger than MaxPayload or frame is shorter than
// Len()+len(payload). It does not allocate.
func (t *Template) Build(frame, payload []byte, id uint16) int {
	n := t.hl + len(payload)
	if len(payload) > MaxPayload || len(frame) < n {
		return 0
	}
	copy(frame, t.hdr[:t.hl])
	ip := frame[t.ipOff : t.ipOff+IPv4Len]
	totLen := uint32(IPv4Len + UDPLen + len(payload))
	binary.BigEndian.PutUint16(ip[2:], uint16(totLen))
	binary.BigEndian.PutUint16(ip[4:], id)
	binary.BigEndian.PutUint16(ip[10:], ^Fold(t.ipSum+totLen+uint32(id)))
	udp := frame[t.ipOff+IPv4Len : n]
	udpLen := uint32(UDPLen + len(payload))
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	copy(udp[UDPLen:], payload)
	sum := Sum(payload, t.udpSum+2*udpLen)
	binary.BigEndian.PutUint16(udp[6:], udpChecksum(sum))
	return n
}
