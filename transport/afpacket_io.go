package transport

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/afpacket"
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
	if a.closed.Load() {
		return 0, replica.ErrClosed
	}
	now := time.Now()
	done, deadline := 0, time.Time{}
	for done < len(ms) {
		k := a.sock.ReserveTX(len(ms) - done)
		if k == 0 {
			if err := a.waitRoom(&deadline); err != nil {
				return done, err
			}
			continue
		}
		n, err := a.fill(ms[done:done+k], now)
		done += n
		serr := a.sock.SubmitTX(a.lens)
		a.st.sent.Add(uint64(len(a.lens)))
		if err == nil {
			err = serr
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// fill writes a frame for each message into the reserved TX frames and
// returns how many messages it consumed (sent or dropped).
func (a *AFPacket) fill(ms []replica.Message, now time.Time) (int, error) {
	a.lens = a.lens[:0]
	for i := range ms {
		m := &ms[i]
		r := a.routes.get(m.Addr, now)
		if r.tmpl == nil {
			a.st.noRoute.Add(1)
			continue
		}
		if len(m.Buf)+pkt.IPv4Len+pkt.UDPLen > a.link.MTU || len(m.Buf)+r.tmpl.Len() > a.sock.MaxFrame() {
			a.st.tooBig.Add(1)
			return i, fmt.Errorf("transport: %d-byte datagram on %s (MTU %d): %w", len(m.Buf), a.link.Name, a.link.MTU, unix.EMSGSIZE)
		}
		a.id++
		a.lens = append(a.lens, r.tmpl.Build(a.sock.TXFrame(len(a.lens)), m.Buf, a.id))
	}
	return len(ms), nil
}

// waitRoom kicks the kernel and yields until a TX frame is free again, for
// at most txRoomWait per SendBatch.
func (a *AFPacket) waitRoom(deadline *time.Time) error {
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(txRoomWait)
		a.st.waits.Add(1)
	} else if now.After(*deadline) {
		return replica.ErrWouldBlock
	}
	if err := a.sock.Kick(); err != nil {
		return err
	}
	runtime.Gosched()
	return nil
}

// RecvBatch copies received datagrams into ms (see replica.Transport): the
// payload is copied once, from the ring into Message.Buf.
func (a *AFPacket) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	a.recvMu.Lock()
	defer a.recvMu.Unlock()
	if a.closed.Load() {
		return 0, replica.ErrClosed
	}
	n := a.drain(ms)
	if n > 0 || wait == 0 {
		return n, nil
	}
	if wait < 0 {
		wait = -1
	}
	if _, err := a.poller.WaitFor(wait, a.woken); err != nil {
		if errors.Is(err, afpacket.ErrClosed) {
			return 0, replica.ErrClosed
		}
		return 0, err
	}
	if a.closed.Load() {
		return 0, replica.ErrClosed
	}
	return a.drain(ms), nil
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
	case len(p.Payload) > len(m.Buf):
		a.st.truncated.Add(1)
		return false
	}
	m.N = copy(m.Buf, p.Payload)
	m.Addr = p.SrcAddr
	return true
}
