package xdp

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netpoll"
)

// Poller waits until any of a set of sockets has received frames, parking
// the goroutine in Go's network poller (not a thread in a blocking
// syscall). It holds an epoll instance watching the sockets; Go's poller
// watches that instance.
type Poller struct {
	p     *netpoll.Poller
	socks []*Socket
}

// NewPoller watches socks. Go's poller watches a single socket directly
// (through a duplicate of its descriptor), and several through an epoll
// instance of their own: one wake-up less on the common path.
func NewPoller(socks ...*Socket) (*Poller, error) {
	fd, err := pollFD(socks)
	if err != nil {
		return nil, err
	}
	p := &Poller{socks: socks}
	if p.p, err = netpoll.NewPoller(fd, "xdp-poller", p.ready, ErrClosed); err != nil {
		return nil, fmt.Errorf("xdp: poller: %w", err)
	}
	return p, nil
}

// pollFD returns a non-blocking descriptor readable when a socket is.
func pollFD(socks []*Socket) (int, error) {
	if len(socks) == 1 {
		return netpoll.Dup(socks[0].fd) // the socket is non-blocking already
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, os.NewSyscallError("epoll_create1", err)
	}
	for _, s := range socks {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(s.fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
			unix.Close(ep)
			return -1, os.NewSyscallError("epoll_ctl", err)
		}
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return ep, nil
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

// Wake makes the goroutine waiting in WaitFor (or Wait) check again.
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

// Close wakes the waiter with ErrClosed and releases the epoll instance
// or the duplicate descriptor (not the sockets).
func (p *Poller) Close() error { return p.p.Close() }
