package neigh

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/ringfire/ringfire/internal/pkt"
)

// Link describes a network interface in the calling thread's namespace.
type Link struct {
	Index              int
	Name               string
	MAC                pkt.MAC // zero if the link has no 6-byte hardware address
	MTU                int
	RxQueues, TxQueues int            // as registered (IFLA_NUM_RX/TX_QUEUES)
	Addrs              []netip.Prefix // IPv4 addresses with prefix length
	Up                 bool           // administratively up (IFF_UP)
	// Kind is the link's type as netlink names it (IFLA_INFO_KIND):
	// "veth", "bridge", "dummy"…, or "device" for a NIC.
	Kind string
}

// LinkByName describes the interface called name.
func LinkByName(name string) (Link, error) { return current.LinkByName(name) }

// LinkByIndex describes the interface with ifindex index.
func LinkByIndex(index int) (Link, error) { return current.LinkByIndex(index) }

// LinkByAddr describes the interface holding the local IPv4 address a.
func LinkByAddr(a netip.Addr) (Link, error) { return current.LinkByAddr(a) }

// LinkByName describes the interface called name.
func (r *Resolver) LinkByName(name string) (Link, error) {
	l, err := r.h.LinkByName(name)
	if err != nil {
		return Link{}, linkErr(fmt.Sprintf("link %q", name), err)
	}
	return r.linkFrom(l)
}

// LinkByIndex describes the interface with ifindex index.
func (r *Resolver) LinkByIndex(index int) (Link, error) {
	l, err := r.h.LinkByIndex(index)
	if err != nil {
		return Link{}, linkErr(fmt.Sprintf("link index %d", index), err)
	}
	return r.linkFrom(l)
}

// LinkByAddr describes the interface holding the local IPv4 address a.
func (r *Resolver) LinkByAddr(a netip.Addr) (Link, error) {
	a = a.Unmap()
	if !a.Is4() {
		return Link{}, fmt.Errorf("neigh: link with address %v: %w", a, ErrNotIPv4)
	}
	addrs, err := retryDump("list addresses", func() ([]netlink.Addr, error) {
		return r.h.AddrList(nil, netlink.FAMILY_V4)
	})
	if err != nil {
		return Link{}, err
	}
	for _, ad := range addrs {
		if ip, ok := netip.AddrFromSlice(ad.IP); ok && ip.Unmap() == a {
			return r.LinkByIndex(ad.LinkIndex)
		}
	}
	return Link{}, fmt.Errorf("neigh: no interface has address %v: %w", a, ErrNoLink)
}

// linkErr wraps a netlink link lookup error, mapping "not found" to
// ErrNoLink.
func linkErr(what string, err error) error {
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) || errors.Is(err, errNoDevice) {
		return fmt.Errorf("neigh: %s: %w", what, ErrNoLink)
	}
	return fmt.Errorf("neigh: %s: %w: %w", what, ErrNetlink, err)
}

// linkFrom converts a netlink link and adds its IPv4 addresses.
func (r *Resolver) linkFrom(nl netlink.Link) (Link, error) {
	a := nl.Attrs()
	l := Link{
		Index:    a.Index,
		Name:     a.Name,
		MTU:      a.MTU,
		RxQueues: a.NumRxQueues,
		TxQueues: a.NumTxQueues,
		Up:       a.Flags&net.FlagUp != 0,
		Kind:     nl.Type(),
	}
	if len(a.HardwareAddr) == len(l.MAC) {
		copy(l.MAC[:], a.HardwareAddr)
	}
	addrs, err := retryDump("list addresses of "+a.Name, func() ([]netlink.Addr, error) {
		return r.h.AddrList(nl, netlink.FAMILY_V4)
	})
	if err != nil {
		return Link{}, err
	}
	for _, ad := range addrs {
		if ad.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(ad.IP)
		ones, _ := ad.Mask.Size()
		if ok && ip.Unmap().Is4() {
			l.Addrs = append(l.Addrs, netip.PrefixFrom(ip.Unmap(), ones))
		}
	}
	return l, nil
}
