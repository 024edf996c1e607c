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

	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/xdp"
)

const (
	hopTTL      = 5 * time.Second       // re-resolve a destination's next hop this often
	resolveWait = time.Second           // bound for resolving a new destination
	txRoomWait  = 20 * time.Millisecond // how long SendBatch waits for TX room
)

// route is the prebuilt header of one destination.
type route struct {
	tmpl    *pkt.Template
	expires time.Time
	err     error // the destination cannot be reached through the interface
}

// txPath is the send side: templates per destination, the TX socket.
type txPath struct {
	x      *XDP
	sock   *xdp.Socket // the socket of queue 0 sends
	routes map[netip.AddrPort]*route
	hops   *neigh.Cache
	lens   []int
	id     uint16
}

func (t *txPath) init(x *XDP) {
	t.x, t.sock, t.routes = x, x.socks[0], map[netip.AddrPort]*route{}
	t.hops = &neigh.Cache{Resolver: x.resolver}
	t.lens = make([]int, 0, x.cfg.Socket.RingSize)
}

// xdpCounters are the transport's own counters.
type xdpCounters struct {
	sent, received     atomic.Uint64
	noRoute, tooBig    atomic.Uint64 // datagrams not sent
	malformed, foreign atomic.Uint64 // frames dropped on receipt
	truncated          atomic.Uint64
	waits              atomic.Uint64 // SendBatch waits for TX room
}

// SendBatch builds one Ethernet/IPv4/UDP frame per message in the TX ring
// and kicks the kernel once. A datagram larger than the interface's MTU
// fails with EMSGSIZE (as kernel UDP does); one to a destination the
// interface cannot reach is dropped and counted.
func (x *XDP) SendBatch(ms []replica.Message) (int, error) {
	x.txMu.Lock()
	defer x.txMu.Unlock()
	if x.closed.Load() {
		return 0, replica.ErrClosed
	}
	t := &x.tx
	now := time.Now()
	done, deadline := 0, time.Time{}
	for done < len(ms) {
		k := t.sock.ReserveTX(len(ms) - done)
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
	err := t.sock.SubmitTX(t.lens)
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
		if r.err != nil {
			t.x.st.noRoute.Add(1)
			continue
		}
		if len(m.Buf)+pkt.IPv4Len+pkt.UDPLen > t.x.link.MTU || len(m.Buf)+r.tmpl.Len() > t.sock.FrameSize() {
			t.x.st.tooBig.Add(1)
			return i, fmt.Errorf("transport: %d-byte datagram on %s (MTU %d): %w", len(m.Buf), t.x.link.Name, t.x.link.MTU, unix.EMSGSIZE)
		}
		t.id++
		t.lens = append(t.lens, r.tmpl.Build(t.sock.TXFrame(len(t.lens)), m.Buf, t.id))
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
	if err := t.sock.Kick(); err != nil {
		return err
	}
	runtime.Gosched()
	return nil
}

// route returns the cached header of dst, resolving its next hop when new
// or expired.
func (t *txPath) route(dst netip.AddrPort, now time.Time) *route {
	r := t.routes[dst]
	if r != nil && now.Before(r.expires) {
		return r
	}
	if r == nil {
		r = &route{}
		t.routes[dst] = r
	}
	r.expires = now.Add(hopTTL)
	tmpl, err := t.resolve(dst)
	if err != nil {
		r.err = err
		return r
	}
	r.tmpl, r.err = tmpl, nil
	return r
}

func (t *txPath) resolve(dst netip.AddrPort) (*pkt.Template, error) {
	x := t.x
	h := pkt.Header{Src: x.link.MAC, SrcAddr: x.local, DstAddr: dst}
	if dst.Addr().IsMulticast() {
		h.Dst, h.TTL = pkt.MulticastMAC(dst.Addr()), uint8(x.cfg.TTL)
		return pkt.NewTemplate(h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveWait)
	defer cancel()
	hop, err := t.hops.Lookup(ctx, dst.Addr())
	if err != nil {
		return nil, err
	}
	if hop.Link.Index != x.link.Index {
		return nil, fmt.Errorf("transport: %v is reached through %s, not %s", dst.Addr(), hop.Link.Name, x.link.Name)
	}
	h.Dst = hop.MAC
	return pkt.NewTemplate(h)
}

// rxPath is the receive side.
type rxPath struct {
	frames [][]byte
	pkt    pkt.Packet
}

func (r *rxPath) init(int) { r.frames = make([][]byte, 64) }

// RecvBatch copies received datagrams into ms (see replica.Transport). The
// payload is copied once, from the UMEM frame into Message.Buf.
func (x *XDP) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	x.rxMu.Lock()
	defer x.rxMu.Unlock()
	if x.closed.Load() {
		return 0, replica.ErrClosed
	}
	n := x.drain(ms)
	if n > 0 || wait == 0 {
		return n, nil
	}
	if wait < 0 {
		wait = -1
	}
	if _, err := x.poller.Wait(wait); err != nil {
		if errors.Is(err, xdp.ErrClosed) {
			return 0, replica.ErrClosed
		}
		return 0, err
	}
	return x.drain(ms), nil
}

// drain takes what the sockets hold, up to len(ms) valid datagrams.
func (x *XDP) drain(ms []replica.Message) int {
	n := 0
	for _, s := range x.socks {
		for n < len(ms) {
			k := s.Receive(x.rx.frames[:min(len(x.rx.frames), len(ms)-n)])
			if k == 0 {
				break
			}
			for _, f := range x.rx.frames[:k] {
				if x.accept(f, &ms[n]) {
					n++
				}
			}
			s.Release()
		}
	}
	x.st.received.Add(uint64(n))
	return n
}

// accept parses one frame into m, or counts why it was dropped.
func (x *XDP) accept(f []byte, m *replica.Message) bool {
	p := &x.rx.pkt
	if err := pkt.Parse(f, p); err != nil {
		x.st.malformed.Add(1)
		return false
	}
	if p.DstAddr.Port() != x.local.Port() {
		x.st.foreign.Add(1)
		return false
	}
	if len(p.Payload) > len(m.Buf) {
		x.st.truncated.Add(1)
		return false
	}
	m.N = copy(m.Buf, p.Payload)
	m.Addr = p.SrcAddr
	return true
}
