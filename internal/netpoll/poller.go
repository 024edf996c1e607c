package netpoll

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Poller is the Waiter of a socket poller (xdp.Poller, afpacket.Poller):
// it waits until the sockets have frames (ready) or the waiter's own
// condition holds (woken), and once closed returns its package's sentinel.
type Poller struct {
	w      *Waiter
	ready  func() bool // the sockets have frames
	closed error       // what WaitFor returns once Close was called
	// woken is the current waiter's condition, written by WaitFor before
	// it waits and read by check in the same goroutine.
	woken func() bool
	// check is built once: a wait allocates nothing.
	check func() bool
}

// NewPoller takes ownership of fd (see New). ready reports whether the
// sockets have frames; closed is what WaitFor returns after Close.
func NewPoller(fd int, name string, ready func() bool, closed error) (*Poller, error) {
	w, err := New(fd, name)
	if err != nil {
		return nil, err
	}
	p := &Poller{w: w, ready: ready, closed: closed}
	p.check = func() bool { return (p.woken != nil && p.woken()) || p.ready() }
	return p, nil
}

// WaitFor returns true when the sockets have frames or woken reports true
// (whoever makes it true calls Wake afterwards), false when timeout passes
// (a negative timeout waits without limit), or the closed error once Close
// was called. One goroutine waits at a time.
func (p *Poller) WaitFor(timeout time.Duration, woken func() bool) (bool, error) {
	p.woken = woken
	ok, err := p.w.Wait(timeout, p.check)
	if errors.Is(err, ErrClosed) {
		return false, p.closed
	}
	return ok, err
}

// Wake makes the goroutine waiting in WaitFor check again.
func (p *Poller) Wake() { p.w.Wake() }

// Close wakes the waiter with the closed error and closes the descriptor.
func (p *Poller) Close() error { return p.w.Close() }

// Dup returns a close-on-exec duplicate of fd (non-blocking when fd is),
// for a Poller to own while the socket keeps fd.
func Dup(fd int) (int, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	return d, nil
}
