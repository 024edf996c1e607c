package main

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/ringfire/ringfire/bpf"
)

// withIfaceAddrs replaces the invalid addresses of flows with each IPv4
// address of the interface.
func withIfaceAddrs(index int, ifname string, flows []bpf.Flow) ([]bpf.Flow, error) {
	l, err := netlink.LinkByIndex(index)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", ifname, permHint(err))
	}
	list, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", ifname, permHint(err))
	}
	var as []netip.Addr
	for _, a := range list {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			as = append(as, ip.Unmap())
		}
	}
	if len(as) == 0 {
		return nil, usagef("%s has no IPv4 address: give --addr or --group", ifname)
	}
	var out []bpf.Flow
	for _, f := range flows {
		if f.Addr.IsValid() {
			out = append(out, f)
			continue
		}
		for _, a := range as {
			out = append(out, bpf.Flow{Addr: a, Port: f.Port})
		}
	}
	return out, nil
}
