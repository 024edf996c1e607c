package transport

import "errors"

// Errors of the package. A transport that cannot be opened here wraps
// ErrXDPUnavailable or ErrAFPacketUnavailable; Config falls back to kernel
// UDP on them unless told not to.
var (
	// ErrXDPUnavailable wraps every reason the AF_XDP path cannot be used
	// here (NewXDP).
	ErrXDPUnavailable = errors.New("transport: AF_XDP cannot be used")
	// ErrAFPacketUnavailable wraps every reason the AF_PACKET path cannot
	// be used here (NewAFPacket).
	ErrAFPacketUnavailable = errors.New("transport: AF_PACKET cannot be used")
	// ErrKind: a Kind (or its name) that is none of udp, xdp, afpacket, auto.
	ErrKind = errors.New("transport: unknown kind")
	// ErrNoBypass wraps the reasons no kernel-bypass transport could be
	// opened when Config.Require forbids falling back to kernel UDP.
	ErrNoBypass = errors.New("transport: no kernel-bypass transport could be used")
)
