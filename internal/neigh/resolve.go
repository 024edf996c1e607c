package neigh

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/pkt"
)

const (
	// DefaultTimeout bounds Resolve when its context has no deadline.
	DefaultTimeout = time.Second
	// pollInterval is how often Resolve rereads the neighbour table while
	// the kernel resolves an address.
	pollInterval = 3 * time.Millisecond
	// retrigger is how long Resolve waits before sending another trigger
	// datagram for an entry that is still missing or FAILED.
	retrigger = 500 * time.Millisecond
	// discardPort is where trigger datagrams go (RFC 863).
	discardPort = 9
)

// usable are the neighbour states whose link-layer address can be used.
const usable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY |
	netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP

// Hop is where to send a frame for one destination.
type Hop struct {
	Link    Link       // the outgoing interface
	Src     netip.Addr // preferred source address (invalid if the link has none)
	Gateway netip.Addr // the router, invalid when the destination is on-link
	MAC     pkt.MAC    // destination MAC for the frame
}

// Resolve returns the next hop for the IPv4 destination dst in the calling
// thread's namespace: multicast groups map to 01:00:5e:..., broadcast to
// ff:ff:ff:ff:ff:ff, anything else is looked up in (and if need be resolved
// into) the neighbour table. It waits at most until ctx's deadline, or
// DefaultTimeout when ctx has none, and then fails with ErrUnresolved.
// Multicast and broadcast destinations need a route like any other (for
// instance "224.0.0.0/4 dev eth0"); without one Resolve fails with
// ErrNoRoute. Local addresses, blackhole and unreachable routes are
// ErrNoRoute too. For multicast and broadcast Gateway is always invalid.
func Resolve(ctx context.Context, dst netip.Addr) (Hop, error) { return current.Resolve(ctx, dst) }

// Resolve is the package's Resolve in the resolver's namespace.
func (rs *Resolver) Resolve(ctx context.Context, dst netip.Addr) (Hop, error) {
	dst = dst.Unmap()
	if !dst.Is4() {
		return Hop{}, fmt.Errorf("neigh: resolve %v: %w", dst, ErrNotIPv4)
	}
	r, err := rs.routeTo(dst)
	if err != nil {
		return Hop{}, err
	}
	link, err := rs.LinkByIndex(r.LinkIndex)
	if err != nil {
		return Hop{}, err
	}
	hop := Hop{Link: link}
	if gw, ok := netip.AddrFromSlice(r.Gw); ok {
		hop.Gateway = gw.Unmap()
	}
	next := dst
	if hop.Gateway.IsValid() {
		next = hop.Gateway
	}
	hop.Src = source(r, link, next)
	switch {
	case dst.IsMulticast():
		hop.MAC, hop.Gateway = pkt.MulticastMAC(dst), netip.Addr{}
		return hop, nil
	case r.Type == unix.RTN_BROADCAST || dst == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		hop.MAC, hop.Gateway = pkt.Broadcast, netip.Addr{}
		return hop, nil
	case r.Type != unix.RTN_UNICAST:
		return Hop{}, fmt.Errorf("neigh: resolve %v: route type %d (local, blackhole, unreachable...): %w", dst, r.Type, ErrNoRoute)
	}
	if hop.MAC, err = rs.neighbour(ctx, link, next); err != nil {
		return Hop{}, err
	}
	return hop, nil
}

// routeTo asks the kernel for the route it would use to reach dst.
func (r *Resolver) routeTo(dst netip.Addr) (netlink.Route, error) {
	a := dst.As4()
	rs, err := r.h.RouteGet(net.IP(a[:]))
	if err != nil {
		return netlink.Route{}, fmt.Errorf("neigh: route to %v: %w: %w", dst, ErrNoRoute, err)
	}
	if len(rs) == 0 || rs[0].LinkIndex == 0 {
		return netlink.Route{}, fmt.Errorf("neigh: route to %v: no output interface: %w", dst, ErrNoRoute)
	}
	return rs[0], nil
}

// source returns the route's preferred source, else the link's address on
// the next hop's subnet, else its first IPv4 address.
func source(r netlink.Route, l Link, next netip.Addr) netip.Addr {
	if src, ok := netip.AddrFromSlice(r.Src); ok && src.Unmap().Is4() {
		return src.Unmap()
	}
	for _, p := range l.Addrs {
		if p.Contains(next) {
			return p.Addr()
		}
	}
	if len(l.Addrs) > 0 {
		return l.Addrs[0].Addr()
	}
	return netip.Addr{}
}
