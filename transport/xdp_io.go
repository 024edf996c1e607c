package transport

import (
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
)

// xdpCounters are a transport's own counters: added to by its sender and
// by the interface's drain (under rxMu), loaded by Stats; they publish
// nothing but themselves.
type xdpCounters struct {
	sendCounters
	received  atomic.Uint64
	truncated atomic.Uint64 // received datagrams larger than the buffer
}

// ifaceCounters count what the interface's sockets received for nobody.
type ifaceCounters struct {
	malformed, foreign atomic.Uint64
}

// SendBatch builds one Ethernet/IPv4/UDP frame per message in the TX ring
// of the interface's first socket and kicks the kernel once. A datagram
// larger than the interface's MTU fails with EMSGSIZE (as kernel UDP
// does); one to a destination the interface cannot reach is dropped and
// counted.
func (x *XDP) SendBatch(ms []replica.Message) (int, error) {
	x.f.txMu.Lock()
	defer x.f.txMu.Unlock()
	return x.tx.send(ms)
}

// RecvBatch copies received datagrams into ms (see replica.Transport). The
// payload is copied once, from the UMEM frame into Message.Buf (twice when
// another transport of the interface received it: through the inbox).
func (x *XDP) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	x.recvMu.Lock()
	defer x.recvMu.Unlock()
	x.genAt = x.f.watchGen.Load() // before recv looks at the watchers
	return x.rx.recv(ms, wait)
}

// drain is the interface's drain for x (a drainer, for x.rx).
func (x *XDP) drain(ms []replica.Message) int { return x.f.drain(x, ms) }

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
		if to.arrival != nil {
			to.arrival()
		}
		return false
	}
	return take(p, m, &x.st.truncated)
}
