package transport

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/internal/pkt"
)

const (
	hopTTL      = 5 * time.Second // re-resolve a destination's next hop this often
	resolveWait = time.Second     // bound for resolving a new destination
)

// route is the prebuilt header of one destination, under the routes' mu.
type route struct {
	tmpl      *pkt.Template // nil until resolved
	expires   time.Time     // refresh after this
	err       error         // why there is no template
	resolving bool          // a refresh runs in the background
}

// routes are the prebuilt headers of a sender's destinations (AF_XDP and
// AF_PACKET alike): the sender calls get holding mu, the lock its sends
// run under; refreshes in the background take it to update a route.
type routes struct {
	mu        *sync.Mutex     // held by get's callers
	refreshes *sync.WaitGroup // refreshes running; wait before closing hops' resolver
	hops      *neigh.Cache    // next hops, in the interface's namespace
	link      neigh.Link      // frames leave through it
	local     netip.AddrPort  // source of the datagrams
	ttl       int             // of multicast datagrams
	m         map[netip.AddrPort]*route
}

// get returns dst's header. A new destination is resolved at once,
// waiting up to resolveWait for the kernel to resolve its next hop (as a
// kernel socket's first datagram waits for ARP); later the header is
// refreshed in the background every hopTTL, the old one serving
// meanwhile, and a destination that did not resolve is retried in the
// background, its datagrams dropped (counted NoRoute) until it resolves.
// So a neighbour that went away never holds up the other destinations.
func (rs *routes) get(dst netip.AddrPort, now time.Time) *route {
	if rs.m == nil {
		rs.m = map[netip.AddrPort]*route{}
	}
	r := rs.m[dst]
	if r == nil {
		r = &route{}
		rs.m[dst] = r
		r.tmpl, r.err = rs.resolve(dst, resolveWait)
		r.expires = now.Add(hopTTL)
		return r
	}
	if !r.resolving && !now.Before(r.expires) {
		r.resolving = true
		rs.refreshes.Add(1)
		go rs.refresh(dst, r)
	}
	return r
}

// refresh resolves dst without the lock and updates its route.
func (rs *routes) refresh(dst netip.AddrPort, r *route) {
	defer rs.refreshes.Done()
	tmpl, err := rs.resolve(dst, resolveWait)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r.resolving = false
	r.expires = time.Now().Add(hopTTL)
	switch {
	case err == nil:
		r.tmpl, r.err = tmpl, nil
	case r.tmpl == nil:
		r.err = err
	default:
		r.expires = time.Now().Add(time.Second) // keep the old header, retry soon
	}
}

// resolve builds dst's header, waiting at most wait for the kernel to
// resolve its next hop (0: only what the neighbour table knows now).
func (rs *routes) resolve(dst netip.AddrPort, wait time.Duration) (*pkt.Template, error) {
	link := rs.link
	h := pkt.Header{Src: link.MAC, SrcAddr: rs.local, DstAddr: dst}
	if dst.Addr().IsMulticast() {
		h.Dst, h.TTL = pkt.MulticastMAC(dst.Addr()), uint8(rs.ttl)
		return pkt.NewTemplate(h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(wait, time.Nanosecond))
	defer cancel()
	hop, err := rs.hops.Lookup(ctx, dst.Addr())
	if err != nil {
		return nil, err
	}
	if hop.Link.Index != link.Index {
		return nil, fmt.Errorf("transport: %v is reached through %s, not %s", dst.Addr(), hop.Link.Name, link.Name)
	}
	h.Dst = hop.MAC
	return pkt.NewTemplate(h)
}
