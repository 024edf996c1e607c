package transport

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/xdp"
)

const (
	hopTTL      = 5 * time.Second       // re-resolve a destination's next hop this often
	resolveWait = time.Second           // bound for resolving a new destination
	txRoomWait  = 20 * time.Millisecond // how long SendBatch waits for TX room
)

// route is the prebuilt header of one destination, under the interface's
// txMu.
type route struct {
	tmpl      *pkt.Template // nil until resolved
	expires   time.Time     // refresh after this
	err       error         // why there is no template
	resolving bool          // a refresh runs in the background
}

// txPath is a transport's send side: templates per destination. It sends
// through the interface's first socket, under the interface's txMu.
type txPath struct {
	x      *XDP
	routes map[netip.AddrPort]*route
	lens   []int
	id     uint16
}

func (t *txPath) init(x *XDP) {
	t.x, t.routes = x, map[netip.AddrPort]*route{}
	t.lens = make([]int, 0, 64)
}

// xdpCounters are a transport's own counters.
type xdpCounters struct {
	sent, received  atomic.Uint64
	noRoute, tooBig atomic.Uint64 // datagrams not sent
	truncated       atomic.Uint64 // received datagrams larger than the buffer
	waits           atomic.Uint64 // SendBatch waits for TX room
}

// ifaceCounters count what the interface's sockets received for nobody.
type ifaceCounters struct {
	malformed, foreign atomic.Uint64
}

// SendBatch builds one Ethernet/IPv4/UDP frame per message in the TX ring
// and kicks the kernel once. A datagram larger than the interface's MTU
// fails with EMSGSIZE (as kernel UDP does); one to a destination the
// interface cannot reach is dropped and counted.
func (x *XDP) SendBatch(ms []replica.Message) (int, error) {
	x.f.txMu.Lock()
	defer x.f.txMu.Unlock()
	if x.closed.Load() {
		return 0, replica.ErrClosed
	}
	t := &x.tx
	now := time.Now()
	done, deadline := 0, time.Time{}
	for done < len(ms) {
		k := x.f.socks[0].ReserveTX(len(ms) - done)
		if k == 0 {
			if err := t.waitRoom(&deadline); err != nil {
				return done, err
			}
			continue
		}
		n, err := t.fill(ms[done:done+k], k, now)
		done += n
		if serr := t.submit(); err == nil {
			err = serr
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// submit queues the frames fill built and counts them as sent.
func (t *txPath) submit() error {
	err := t.x.f.socks[0].SubmitTX(t.lens)
	t.x.st.sent.Add(uint64(len(t.lens)))
	return err
}

// fill writes frames for up to k messages into the reserved TX frames and
// returns how many messages it consumed (sent or dropped).
func (t *txPath) fill(ms []replica.Message, k int, now time.Time) (int, error) {
	t.lens = t.lens[:0]
	for i := range ms[:k] {
		m := &ms[i]
		r := t.route(m.Addr, now)
		if r.tmpl == nil {
			t.x.st.noRoute.Add(1)
			continue
		}
		if !t.x.frameFits(len(m.Buf), r.tmpl.Len()) {
			t.x.st.tooBig.Add(1)
			l := t.x.f.link
			return i, fmt.Errorf("transport: %d-byte datagram on %s (MTU %d): %w", len(m.Buf), l.Name, l.MTU, unix.EMSGSIZE)
		}
		t.id++
		t.lens = append(t.lens, r.tmpl.Build(t.x.f.socks[0].TXFrame(len(t.lens)), m.Buf, t.id))
	}
	return k, nil
}

// waitRoom kicks the kernel and yields until a TX frame completes, for at
// most txRoomWait per SendBatch.
func (t *txPath) waitRoom(deadline *time.Time) error {
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(txRoomWait)
		t.x.st.waits.Add(1)
	} else if now.After(*deadline) {
		return replica.ErrWouldBlock
	}
	if err := t.x.f.socks[0].Kick(); err != nil {
		return err
	}
	runtime.Gosched()
	return nil
}

// route returns dst's header. A new destination is resolved at once,
// waiting up to resolveWait for the kernel to resolve its next hop (as a
// kernel socket's first datagram waits for ARP); later the header is
// refreshed in the background every hopTTL, the old one serving
// meanwhile, and a destination that did not resolve is retried in the
// background, its datagrams dropped (counted NoRoute) until it resolves.
// So a neighbour that went away never holds up the other destinations.
func (t *txPath) route(dst netip.AddrPort, now time.Time) *route {
	r := t.routes[dst]
	if r == nil {
		r = &route{}
		t.routes[dst] = r
		r.tmpl, r.err = t.resolve(dst, resolveWait)
		r.expires = now.Add(hopTTL)
		return r
	}
	if !r.resolving && !now.Before(r.expires) {
		r.resolving = true
		t.x.f.refreshes.Add(1)
		go t.refresh(dst, r)
	}
	return r
}

// refresh resolves dst without the lock and updates its route.
func (t *txPath) refresh(dst netip.AddrPort, r *route) {
	defer t.x.f.refreshes.Done()
	tmpl, err := t.resolve(dst, resolveWait)
	t.x.f.txMu.Lock()
	defer t.x.f.txMu.Unlock()
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
func (t *txPath) resolve(dst netip.AddrPort, wait time.Duration) (*pkt.Template, error) {
	x, link := t.x, t.x.f.link
	h := pkt.Header{Src: link.MAC, SrcAddr: x.local, DstAddr: dst}
	if dst.Addr().IsMulticast() {
		h.Dst, h.TTL = pkt.MulticastMAC(dst.Addr()), uint8(x.cfg.TTL)
		return pkt.NewTemplate(h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(wait, time.Nanosecond))
	defer cancel()
	hop, err := x.f.hops.Lookup(ctx, dst.Addr())
	if err != nil {
		return nil, err
	}
	if hop.Link.Index != link.Index {
		return nil, fmt.Errorf("transport: %v is reached through %s, not %s", dst.Addr(), hop.Link.Name, link.Name)
	}
	h.Dst = hop.MAC
	return pkt.NewTemplate(h)
}

// RecvBatch copies received datagrams into ms (see replica.Transport). The
// payload is copied once, from the UMEM frame into Message.Buf (twice when
// another transport of the interface received it: through the inbox).
func (x *XDP) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	x.recvMu.Lock()
	defer x.recvMu.Unlock()
	if x.closed.Load() {
		return 0, replica.ErrClosed
	}
	n := x.f.drain(x, ms)
	if n > 0 || wait == 0 {
		return n, nil
	}
	if wait < 0 {
		wait = -1
	}
	if _, err := x.poller.WaitFor(wait, x.woken); err != nil {
		if errors.Is(err, xdp.ErrClosed) {
			return 0, replica.ErrClosed
		}
		return 0, err
	}
	if x.closed.Load() {
		return 0, replica.ErrClosed
	}
	return x.f.drain(x, ms), nil
}

// drain fills ms for x: first what other transports received for it, then
// from the sockets, handing datagrams for other ports to their inboxes.
func (f *iface) drain(x *XDP, ms []replica.Message) int {
	f.rxMu.Lock()
	defer f.rxMu.Unlock()
	n := x.in.take(ms, &x.st.truncated)
	for _, s := range f.socks {
		for n < len(ms) {
			k := s.Receive(f.frames[:min(len(f.frames), len(ms)-n)])
			if k == 0 {
				break
			}
			for _, fr := range f.frames[:k] {
				if f.deliver(x, fr, &ms[n]) {
					n++
				}
			}
			s.Release()
		}
	}
	x.st.received.Add(uint64(n))
	return n
}

// deliver parses one frame into m when it is for x (true), or into another
// transport's inbox (waking it), or counts it dropped.
func (f *iface) deliver(x *XDP, fr []byte, m *replica.Message) bool {
	p := &f.pkt
	if err := pkt.Parse(fr, p); err != nil {
		f.st.malformed.Add(1)
		return false
	}
	to := f.only
	if to == nil || to.local.Port() != p.DstAddr.Port() {
		to = f.users[p.DstAddr.Port()]
	}
	switch {
	case to == nil:
		f.st.foreign.Add(1)
		return false
	case to != x:
		to.in.put(p.Payload, p.SrcAddr)
		to.poller.Wake()
		return false
	case len(p.Payload) > len(m.Buf):
		x.st.truncated.Add(1)
		return false
	}
	m.N = copy(m.Buf, p.Payload)
	m.Addr = p.SrcAddr
	return true
}
