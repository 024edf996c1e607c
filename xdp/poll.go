package xdp

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Poller waits until any of a set of sockets has received frames, parking
// the goroutine in Go's network poller (not a thread in a blocking
// syscall). It holds an epoll instance watching the sockets; Go's poller
// watches that instance.
type Poller struct {
	file *os.File
	rc   interface {
		Read(func(uintptr) bool) error
	}
	socks []*Socket
	shut  atomic.Bool
}

// NewPoller watches socks. Go's poller watches a single socket directly
// (through a duplicate of its descriptor), and several through an epoll
// instance of their own: one wake-up less on the common path.
func NewPoller(socks ...*Socket) (*Poller, error) {
	fd, err := pollFD(socks)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "xdp-poller")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("xdp: poller: %w", err)
	}
	return &Poller{file: f, rc: rc, socks: socks}, nil
}

// pollFD returns a non-blocking descriptor readable when a socket is.
func pollFD(socks []*Socket) (int, error) {
	if len(socks) == 1 {
		fd, err := unix.FcntlInt(uintptr(socks[0].fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
		}
		return fd, nil // the socket is non-blocking already
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
	ready := func() bool { return (woken != nil && woken()) || p.ready() }
	if ready() {
		return true, nil
	}
	var dl time.Time
	if timeout >= 0 {
		dl = time.Now().Add(timeout)
	}
	for {
		// Wake moves the deadline to the past: set ours before checking,
		// so that a Wake after the check is not lost.
		if err := p.file.SetReadDeadline(dl); err != nil {
			return false, p.closedOr(err)
		}
		ok := false
		err := p.rc.Read(func(uintptr) bool {
			ok = ready()
			return ok
		})
		switch {
		case ok:
			return true, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return false, p.closedOr(err)
		case !dl.IsZero() && !time.Now().Before(dl):
			return false, nil
		}
		// A Wake that woken no longer reports: wait again, until our
		// deadline.
	}
}

// Wake makes the goroutine waiting in WaitFor (or Wait) check again.
func (p *Poller) Wake() { p.file.SetReadDeadline(time.Unix(1, 0)) }

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

func (p *Poller) closedOr(err error) error {
	if p.shut.Load() || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("xdp: wait: %w", err)
}

// Close wakes waiters with ErrClosed and releases the epoll instance (not
// the sockets).
func (p *Poller) Close() error {
	p.shut.Store(true)
	return p.file.Close()
}
