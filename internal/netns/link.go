package netns

import (
	"fmt"
	"net/netip"
)

// Link is one more veth pair between the two namespaces of a Pair, on a
// subnet of its own so that each link is its own route.
type Link struct {
	AIf, BIf     string     // veth end in A and in B ("veth1", "veth2"...)
	AAddr, BAddr netip.Addr // 10.79.<k>.1 and 10.79.<k>.2, /24
}

// AddLink joins p's namespaces with another veth pair, named veth<n> in
// both (n = 1, 2... per call on p), addresses 10.79.<k>.1/24 (A) and
// 10.79.<k>.2/24 (B) with k a fresh per-process index, up, MTU 1500. The
// link goes away with the namespaces.
func (p *Pair) AddLink() (Link, error) {
	p.links++
	k := next()
	name := fmt.Sprintf("veth%d", p.links)
	l := Link{AIf: name, BIf: name,
		AAddr: netip.AddrFrom4([4]byte{10, 79, byte(k), 1}),
		BAddr: netip.AddrFrom4([4]byte{10, 79, byte(k), 2})}
	if err := veth(p.A, l.AIf, p.B, l.BIf); err != nil {
		return Link{}, err
	}
	ends := []struct {
		ns   *NS
		ifn  string
		addr netip.Addr
	}{{p.A, l.AIf, l.AAddr}, {p.B, l.BIf, l.BAddr}}
	for _, e := range ends {
		if err := batch(e.ns, fmt.Sprintf("addr add %s/24 dev %s", e.addr, e.ifn), "link set "+e.ifn+" up"); err != nil {
			return Link{}, err
		}
	}
	for _, e := range ends { // carrier needs both ends up
		if err := waitReady(e.ns, e.ifn); err != nil {
			return Link{}, err
		}
	}
	return l, nil
}
