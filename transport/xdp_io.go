package transport

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/xdp"
)

const txRoomWait = 20 * time.Millisecond // how long SendBatch waits for TX room

// txPath is a transport's send side: templates per destination. It sends
// through the interface's first socket, under the interface's txMu.
type txPath struct {
	x      *XDP
	routes routes
	lens   []int
	id     uint16
}

func (t *txPath) init(x *XDP) {
	t.x = x
	t.routes = routes{mu: &x.f.txMu, refreshes: &x.f.refreshes, hops: &x.f.hops,
		link: x.f.link, local: x.local, ttl: x.cfg.TTL}
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
		r := t.routes.get(m.Addr, now)
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
