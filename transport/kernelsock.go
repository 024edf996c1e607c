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

// heldPort is a kernel-bypass transport's kernel UDP socket (see
// reservePort) and its local address.
type heldPort struct {
	kernel *net.UDPConn
	local  netip.AddrPort
}

// LocalAddr is the address and port datagrams are received on (for a
// multicast receiver: the interface's address and the group's port).
func (h *heldPort) LocalAddr() netip.AddrPort { return h.local }

// hold binds the kernel socket (reservePort) and fixes the local address.
func (h *heldPort) hold(link neigh.Link, bind netip.AddrPort, group netip.Addr, dropAll bool) (err error) {
	h.kernel, h.local, err = reservePort(link, bind, group, dropAll)
	return err
}

// release closes the kernel socket, when there is one.
func (h *heldPort) release() error {
	if h.kernel == nil {
		return nil
	}
	return h.kernel.Close()
}
