package xdp

import (
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/netpoll"
)

// Poller waits until any of a set of sockets has received frames, parking
// the goroutine in Go's network poller (not a thread in a blocking
// syscall). The sockets are in Go's poller only while a goroutine waits
// (see netpoll.Poller): a socket a loop polls itself wakes nobody.
type Poller struct {
	p     *netpoll.Poller
	socks []*Socket
}

// NewPoller watches socks.
func NewPoller(socks ...*Socket) (*Poller, error) {
	fds := make([]int, len(socks))
	for i, s := range socks {
		fds[i] = s.fd
	}
	p := &Poller{socks: socks}
	var err error
	if p.p, err = netpoll.NewPoller(fds, "xdp-poller", p.ready, ErrClosed); err != nil {
		return nil, fmt.Errorf("xdp: poller: %w", err)
	}
	return p, nil
}

// Wait returns when a socket has received frames (true), when timeout
// passes (false; a negative timeout waits without limit), or with
// ErrClosed once Close was called.
func (p *Poller) Wait(timeout time.Duration) (bool, error) { return p.WaitFor(timeout, nil) }

// WaitFor is Wait that also returns true once woken reports true; whoever
// makes woken true calls Wake afterwards. A poller has one waiter at a time
// (Go's poller parks one reader of a descriptor): give each goroutine that
// waits its own poller of the same sockets.
func (p *Poller) WaitFor(timeout time.Duration, woken func() bool) (bool, error) {
	return p.p.WaitFor(timeout, woken)
}

// WaitWoken is WaitFor without the sockets: only woken (with Wake), the
// timeout or Close end it. For a waiter whose frames another goroutine
// receives from the same sockets and hands over: their frames then wake
// nobody here.
func (p *Poller) WaitWoken(timeout time.Duration, woken func() bool) (bool, error) {
	return p.p.WaitWoken(timeout, woken)
}

// Wake makes the goroutine waiting in WaitFor, WaitWoken or Wait check
// again.
func (p *Poller) Wake() { p.p.Wake() }

// ready reports whether a socket has frames, waking any whose fill ring
// asks for it (a zero-copy driver may wait for that before receiving).
func (p *Poller) ready() bool {
	for _, s := range p.socks {
		if s.Readable() {
			return true
		}
		if s.Fill.NeedWakeup() {
			s.rx.pollWakeups.Add(1)
			s.wakeRX()
		}
	}
	return false
}

// Close wakes the waiter with ErrClosed and releases the poller's epoll
// instance (not the sockets).
func (p *Poller) Close() error { return p.p.Close() }
