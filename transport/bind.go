package transport

import (
	"net/netip"

	"github.com/ringfire/ringfire/replica"
)

// XDPForServer and AFPacketForServer are the configurations of a server's
// AF_XDP and AF_PACKET transports: base (the interface; the attach mode and
// sockets, or the rings) with the local address and port and the multicast
// TTL the server asks of kernel UDP (serverBind).
func XDPForServer(base XDPConfig, u replica.UDPConfig) XDPConfig {
	base.Bind, base.TTL = serverBind(u)
	return base
}

// serverBind is where a server's datagram transport binds, and its
// multicast TTL, from the kernel UDP settings the server asks for.
func serverBind(u replica.UDPConfig) (netip.AddrPort, int) {
	return netip.AddrPortFrom(u.Iface, u.Bind.Port()), u.TTL
}

// AFPacketForServer is XDPForServer for AF_PACKET.
func AFPacketForServer(base AFPacketConfig, u replica.UDPConfig) AFPacketConfig {
	base.Bind, base.TTL = serverBind(u)
	return base
}

// XDPForMirror and AFPacketForMirror are the configurations of a mirror's
// AF_XDP and AF_PACKET transports: base with what the source announced
// (mirrorBind), a multicast group to receive, or unicast to a free port of
// the interface.
func XDPForMirror(base XDPConfig, s replica.DatagramSpec) XDPConfig {
	base.Bind, base.Group = mirrorBind(s)
	return base
}

// mirrorBind is where a mirror's datagram transport binds, and the group
// it receives (invalid for unicast), from what the source announced.
func mirrorBind(s replica.DatagramSpec) (netip.AddrPort, netip.Addr) {
	if s.Group.IsValid() {
		return netip.AddrPortFrom(s.Iface, s.Group.Port()), s.Group.Addr()
	}
	return netip.AddrPortFrom(s.Iface, 0), netip.Addr{}
}

// AFPacketForMirror is XDPForMirror for AF_PACKET.
func AFPacketForMirror(base AFPacketConfig, s replica.DatagramSpec) AFPacketConfig {
	base.Bind, base.Group = mirrorBind(s)
	return base
}
