package afpacket

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netpoll"
)

// Poller waits until a socket's receive ring has a block for user space,
// parking the goroutine in Go's network poller (not a thread in a blocking
// syscall): the kernel signals the socket readable when it hands a block
// over. It watches a duplicate of the socket's descriptor, so Close the
// poller too: the socket lives until both are closed.
type Poller struct {
	w     *netpoll.Waiter
	s     *Socket
	woken func() bool // the waiter's, for readyFn
	// readyFn is built once: a wait allocates nothing.
	readyFn func() bool
}

// NewPoller watches s.
func NewPoller(s *Socket) (*Poller, error) {
	fd, err := unix.FcntlInt(uintptr(s.rxfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	w, err := netpoll.New(fd, "afpacket-poller") // non-blocking: Go's poller watches it
	if err != nil {
		return nil, fmt.Errorf("afpacket: poller: %w", err)
	}
	p := &Poller{w: w, s: s}
	p.readyFn = func() bool { return (p.woken != nil && p.woken()) || p.s.Readable() }
	return p, nil
}

// WaitFor returns true when the socket has frames or woken reports true
// (whoever makes it true calls Wake afterwards), false when timeout passes
// (a negative timeout waits without limit), or ErrClosed once Close was
// called. One goroutine waits at a time, the one that receives: WaitFor
// reads the receive side's state.
func (p *Poller) WaitFor(timeout time.Duration, woken func() bool) (bool, error) {
	p.woken = woken
	ok, err := p.w.Wait(timeout, p.readyFn)
	if errors.Is(err, netpoll.ErrClosed) {
		return false, ErrClosed
	}
	return ok, err
}

// Wake makes the goroutine waiting in WaitFor check again.
func (p *Poller) Wake() { p.w.Wake() }

// Close wakes the waiter with ErrClosed and closes the duplicate
// descriptor (not the socket).
func (p *Poller) Close() error { return p.w.Close() }
