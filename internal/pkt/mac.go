package pkt

import "net/netip"

// MAC is an Ethernet (EUI-48) address.
type MAC [6]byte

// Broadcast is ff:ff:ff:ff:ff:ff.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

const hexDigits = "0123456789abcdef"

// String formats m as six lower-case, colon-separated hex bytes.
func (m MAC) String() string {
	var b [17]byte
	for i, v := range m {
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i] = hexDigits[v>>4]
		b[3*i+1] = hexDigits[v&0xf]
	}
	return string(b[:])
}

// IsZero reports whether m is 00:00:00:00:00:00.
func (m MAC) IsZero() bool { return m == MAC{} }

// MulticastMAC returns the Ethernet address an IPv4 multicast group maps to
// (RFC 1112): 01:00:5e followed by the low 23 bits of the group. For an
// address that is not IPv4 it returns the zero MAC.
func MulticastMAC(group netip.Addr) MAC {
	group = group.Unmap()
	if !group.Is4() {
		return MAC{}
	}
	a := group.As4()
	return MAC{0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]}
}
