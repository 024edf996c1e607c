package afpacket

import (
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/netpoll"
)

// Poller waits until a socket's receive ring has frames for user space,
// parking the goroutine in Go's network poller (not a thread in a blocking
// syscall): the kernel signals the socket readable when it hands a frame
// (frame ring) or a block (block ring) over. The socket is in Go's poller only while a goroutine waits (see
// netpoll.Poller).
type Poller struct {
	p *netpoll.Poller
}

// NewPoller watches s.
func NewPoller(s *Socket) (*Poller, error) {
	p, err := netpoll.NewPoller([]int{s.rxfd}, "afpacket-poller", s.Readable, ErrClosed)
	if err != nil {
		return nil, fmt.Errorf("afpacket: poller: %w", err)
	}
	return &Poller{p: p}, nil
}

// WaitFor returns true when the socket has frames or woken reports true
// (whoever makes it true calls Wake afterwards), false when timeout passes
// (a negative timeout waits without limit), or ErrClosed once Close was
// called. One goroutine waits at a time, the one that receives: WaitFor
// reads the receive side's state.
func (p *Poller) WaitFor(timeout time.Duration, woken func() bool) (bool, error) {
	return p.p.WaitFor(timeout, woken)
}

// Wake makes the goroutine waiting in WaitFor check again.
func (p *Poller) Wake() { p.p.Wake() }

// Close wakes the waiter with ErrClosed and closes the poller's epoll
// instance (not the socket).
func (p *Poller) Close() error { return p.p.Close() }
