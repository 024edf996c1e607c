package transport

import (
	"time"

	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
)

// SendBatch builds one Ethernet/IPv4/UDP frame per message in the TX ring
// and kicks the kernel once per run of free frames. A datagram larger than
// the interface's MTU fails with EMSGSIZE (as kernel UDP does); one to a
// destination the interface cannot reach is dropped and counted.
func (a *AFPacket) SendBatch(ms []replica.Message) (int, error) {
	a.txMu.Lock()
	defer a.txMu.Unlock()
	return a.tx.send(ms)
}

// RecvBatch copies received datagrams into ms (see replica.Transport): the
// payload is copied once, from the ring into Message.Buf.
func (a *AFPacket) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	a.recvMu.Lock()
	defer a.recvMu.Unlock()
	return a.rx.recv(ms, wait)
}

// drain parses what the ring holds into ms.
func (a *AFPacket) drain(ms []replica.Message) int {
	n := 0
	for n < len(ms) {
		k := a.sock.Receive(a.frames[:min(len(a.frames), len(ms)-n)])
		if k == 0 {
			break
		}
		for _, fr := range a.frames[:k] {
			if a.deliver(fr, &ms[n]) {
				n++
			}
		}
	}
	a.sock.Release()
	a.st.received.Add(uint64(n))
	return n
}

// deliver parses one frame into m (true), or counts it dropped.
func (a *AFPacket) deliver(fr []byte, m *replica.Message) bool {
	p := &a.pkt
	switch err := pkt.Parse(fr, p); {
	case err != nil:
		a.st.malformed.Add(1)
		return false
	case p.DstAddr.Port() != a.local.Port():
		a.st.stray.Add(1)
		return false
	}
	return take(p, m, &a.st.truncated)
}
