package pkt

import "errors"

// Sentinel errors. Errors returned by this package wrap exactly one of them.
var (
	ErrShort       = errors.New("pkt: frame too short")
	ErrNotIPv4     = errors.New("pkt: not IPv4")
	ErrNotUDP      = errors.New("pkt: not UDP")
	ErrFragment    = errors.New("pkt: IP fragment")
	ErrChecksum    = errors.New("pkt: bad checksum")
	ErrLength      = errors.New("pkt: inconsistent length field")
	ErrShortBuffer = errors.New("pkt: frame buffer too short")
	ErrTooLarge    = errors.New("pkt: payload too large")
	ErrVLAN        = errors.New("pkt: VLAN ID out of range 0..4094")
)
