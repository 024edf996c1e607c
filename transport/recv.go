package transport

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
)

// drainer fills messages with what a transport's rings hold, without
// waiting, and returns how many.
type drainer interface {
	drain(ms []replica.Message) int
}

// waiter is a socket poller: an xdp.Poller or an afpacket.Poller.
type waiter interface {
	WaitFor(timeout time.Duration, woken func() bool) (bool, error)
}

// handedWaiter is a poller that can also wait for its Wake alone (the
// xdp.Poller of a shared interface).
type handedWaiter interface {
	WaitWoken(timeout time.Duration, woken func() bool) (bool, error)
}

// receiver is a kernel-bypass transport's receive side. Its user holds
// the transport's receive lock around recv.
type receiver struct {
	closed *atomic.Bool // the transport's: Close stores true (Swap), then closes the poller
	src    drainer
	poller waiter
	woken  func() bool // for the poller: built once, a wait allocates nothing
	shut   error       // what the poller returns once closed
	// handed, when set, reports that another transport's loop watches the
	// sockets and hands this one its datagrams (AF_XDP sockets shared by
	// the transports of an interface): a wait then leaves the sockets
	// alone and waits for that hand-over (the poller is a handedWaiter).
	handed func() bool
}

// recv copies received datagrams into ms (see replica.Transport.RecvBatch).
func (r *receiver) recv(ms []replica.Message, wait time.Duration) (int, error) {
	if r.closed.Load() {
		return 0, replica.ErrClosed
	}
	n := r.src.drain(ms)
	if n > 0 || wait == 0 {
		return n, nil
	}
	if wait < 0 {
		wait = -1
	}
	var ok bool
	var err error
	hw, handed := r.poller.(handedWaiter)
	handed = handed && r.handed != nil && r.handed()
	if handed {
		ok, err = hw.WaitWoken(wait, r.woken)
	} else {
		ok, err = r.poller.WaitFor(wait, r.woken)
	}
	if err != nil {
		if errors.Is(err, r.shut) {
			return 0, replica.ErrClosed
		}
		return 0, err
	}
	if r.closed.Load() {
		return 0, replica.ErrClosed
	}
	if handed && !ok {
		return 0, nil // the sockets are the watcher's to drain
	}
	return r.src.drain(ms), nil
}

// take copies p's payload into m (true), or counts it in truncated when
// m's buffer is too small for it.
func take(p *pkt.Packet, m *replica.Message, truncated *atomic.Uint64) bool {
	if len(p.Payload) > len(m.Buf) {
		truncated.Add(1)
		return false
	}
	m.N = copy(m.Buf, p.Payload)
	m.Addr = p.SrcAddr
	return true
}
