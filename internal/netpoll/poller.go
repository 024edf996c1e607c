package netpoll

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Poller is the Waiter of a socket poller (xdp.Poller, afpacket.Poller):
// it waits until the sockets have frames (ready) or the waiter's own
// condition holds (woken), and once closed returns its package's sentinel.
//
// It watches the sockets (which it does not own) through an epoll
// instance of its own, which Go's poller watches, and only while a
// goroutine waits in WaitFor: the sockets are added to the instance when
// a wait begins and removed when it ends, for EPOLLIN only. A socket that
// is in Go's poller for good wakes the poller's thread for every frame it
// receives and every buffer the kernel frees after a send, whether or not
// anyone waits; a loop that polls the sockets itself (replica's wait
// modes) would pay a thread wake-up per datagram for nothing.
type Poller struct {
	w      *Waiter // owns the epoll instance
	fds    []int   // the sockets, armed in the instance during a wait
	ready  func() bool
	closed error // what WaitFor returns once Close was called
	// woken is the current waiter's condition, written by WaitFor before
	// it waits and read by check in the same goroutine.
	woken func() bool
	// check is built once: a wait allocates nothing.
	check func() bool
	// waiting is true while a goroutine is in WaitFor: stored by it
	// (before its first check, and after its last), loaded by Wake.
	waiting atomic.Bool
	// arm's state, in the one waiter's goroutine; armFn is built once.
	armFn  func(ep int)
	op     int
	armErr error
	ev     unix.EpollEvent
}

// NewPoller watches fds (non-blocking sockets it does not own; the caller
// keeps them open while the Poller lives). ready reports whether the
// sockets have frames; closed is what WaitFor returns after Close.
func NewPoller(fds []int, name string, ready func() bool, closed error) (*Poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, os.NewSyscallError("fcntl O_NONBLOCK", err)
	}
	w, err := New(ep, name)
	if err != nil {
		return nil, err
	}
	p := &Poller{w: w, fds: append([]int(nil), fds...), ready: ready, closed: closed}
	p.check = func() bool { return (p.woken != nil && p.woken()) || p.ready() }
	p.armFn = p.armOn
	return p, nil
}

// WaitFor returns true when the sockets have frames or woken reports true
// (whoever makes it true calls Wake afterwards), false when timeout passes
// (a negative timeout waits without limit), or the closed error once Close
// was called. One goroutine waits at a time.
func (p *Poller) WaitFor(timeout time.Duration, woken func() bool) (bool, error) {
	// Arm before the first check of ready: a frame that comes after the
	// check makes the instance readable; one before it, ready sees.
	if err := p.arm(unix.EPOLL_CTL_ADD); err != nil {
		p.arm(unix.EPOLL_CTL_DEL)
		return false, p.closedOr(err)
	}
	p.woken = woken
	p.waiting.Store(true)
	ok, err := p.w.Wait(timeout, p.check)
	p.waiting.Store(false)
	p.arm(unix.EPOLL_CTL_DEL)
	return ok, p.closedOr(err)
}

// WaitWoken is WaitFor without the sockets: it returns true once woken
// reports true (whoever makes it true calls Wake afterwards), false when
// timeout passes, or the closed error. It is for a waiter whose frames
// another goroutine drains and hands over (a shared AF_XDP socket that
// another transport's loop watches itself): the sockets' frames then wake
// no thread of this process, inside the sender's system call or anywhere.
func (p *Poller) WaitWoken(timeout time.Duration, woken func() bool) (bool, error) {
	p.woken = woken
	p.waiting.Store(true)
	ok, err := p.w.Wait(timeout, p.woken)
	p.waiting.Store(false)
	return ok, p.closedOr(err)
}

// arm adds the sockets to the epoll instance or removes them (op). The
// instance's descriptor is used under the Waiter's reference: Close never
// closes it under us, and after Close arm fails with ErrClosed.
func (p *Poller) arm(op int) error {
	p.op, p.armErr = op, nil
	if err := p.w.control(p.armFn); err != nil {
		return err
	}
	return p.armErr
}

// armOn is arm's work on the instance's descriptor ep (p.armFn).
func (p *Poller) armOn(ep int) {
	for _, fd := range p.fds {
		p.ev = unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(ep, p.op, fd, &p.ev); err != nil && p.op == unix.EPOLL_CTL_ADD {
			p.armErr = os.NewSyscallError("epoll_ctl", err)
			return
		}
	}
}

func (p *Poller) closedOr(err error) error {
	if errors.Is(err, ErrClosed) {
		return p.closed
	}
	return err
}

// Wake makes the goroutine waiting in WaitFor check again; without one it
// costs an atomic load (a shared AF_XDP socket's drain wakes the other
// transports' pollers for every datagram it hands them). Whoever makes
// woken true does so before calling Wake, and WaitFor marks itself
// waiting before its first check: one of the two sees the other.
func (p *Poller) Wake() {
	if p.waiting.Load() {
		p.w.Wake()
	}
}

// Close wakes the waiter with the closed error and closes the epoll
// instance (not the sockets).
func (p *Poller) Close() error { return p.w.Close() }

// Dup returns a close-on-exec duplicate of c's descriptor (non-blocking
// when c's is: the flag belongs to the open file, which both share), for
// the caller to own and close. The duplicate is a plain descriptor in no
// poller. Not c.File: os.NewFile puts a non-blocking descriptor in Go's
// poller for edge-triggered EPOLLIN and EPOLLOUT, so every datagram
// received and every send buffer freed would wake the poller's thread.
func Dup(c syscall.Conn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	cerr := raw.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	if cerr != nil {
		return -1, cerr
	}
	if err != nil {
		return -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	return fd, nil
}
