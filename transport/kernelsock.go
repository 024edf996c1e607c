package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/afpacket"
	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/replica"
)

// reservePort binds the kernel UDP socket that stays open beside a
// kernel-bypass transport: it reserves the port (nobody else binds it, and
// the kernel answers no port-unreachable) and joins group, when valid, so
// the host sends the IGMP reports snooping switches need. It returns the
// socket and the local address: bind's, or the interface's first IPv4
// address when bind's is unspecified.
//
// dropAll attaches a socket filter passing nothing, before the bind: an
// AF_PACKET ring taps the frames but the stack still delivers each
// datagram to this socket too, and the filter keeps its queue empty.
// (AF_XDP steers the frames away from the stack: nothing reaches it.)
func reservePort(link neigh.Link, bind netip.AddrPort, group netip.Addr, dropAll bool) (*net.UDPConn, netip.AddrPort, error) {
	addr := bind.Addr()
	if !addr.IsValid() || addr.IsUnspecified() {
		if len(link.Addrs) == 0 {
			return nil, netip.AddrPort{}, fmt.Errorf("interface %s has no IPv4 address", link.Name)
		}
		addr = link.Addrs[0].Addr()
	}
	at := netip.AddrPortFrom(addr, bind.Port())
	if group.IsValid() {
		at = netip.AddrPortFrom(netip.IPv4Unspecified(), bind.Port())
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			if serr == nil && dropAll {
				serr = afpacket.SetFilter(int(fd), afpacket.DropAll())
			}
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", at.String())
	if err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("reserve UDP port: %w", err)
	}
	conn := pc.(*net.UDPConn)
	local := netip.AddrPortFrom(addr, conn.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	if !group.IsValid() {
		return conn, local, nil
	}
	err = func() error {
		ifi, err := net.InterfaceByIndex(link.Index)
		if err != nil {
			return err
		}
		if err := ipv4.NewPacketConn(conn).JoinGroup(ifi, &net.UDPAddr{IP: group.AsSlice()}); err != nil {
			return fmt.Errorf("join %v on %s: %w", group, link.Name, err)
		}
		return nil
	}()
	if err != nil {
		conn.Close()
		return nil, netip.AddrPort{}, err
	}
	return conn, local, nil
}

// serverBind is where a server's datagram transport binds, and its
// multicast TTL, from the kernel UDP settings the server asks for.
func serverBind(u replica.UDPConfig) (netip.AddrPort, int) {
	return netip.AddrPortFrom(u.Iface, u.Bind.Port()), u.TTL
}

// mirrorBind is where a mirror's datagram transport binds, and the group
// it receives (invalid for unicast), from what the source announced.
func mirrorBind(s replica.DatagramSpec) (netip.AddrPort, netip.Addr) {
	if s.Group.IsValid() {
		return netip.AddrPortFrom(s.Iface, s.Group.Port()), s.Group.Addr()
	}
	return netip.AddrPortFrom(s.Iface, 0), netip.Addr{}
}
