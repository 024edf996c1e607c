package afpacket

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Poller waits until a socket's receive ring has a block for user space,
// parking the goroutine in Go's network poller (not a thread in a blocking
// syscall): the kernel signals the socket readable when it hands a block
// over. It watches a duplicate of the socket's descriptor, so Close the
// poller too: the socket lives until both are closed.
type Poller struct {
	file *os.File
	rc   syscall.RawConn
	s    *Socket
	shut atomic.Bool
}

// NewPoller watches s.
func NewPoller(s *Socket) (*Poller, error) {
	fd, err := unix.FcntlInt(uintptr(s.rxfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
	}
	f := os.NewFile(uintptr(fd), "afpacket-poller") // non-blocking: Go's poller watches it
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("afpacket: poller: %w", err)
	}
	return &Poller{file: f, rc: rc, s: s}, nil
}

// WaitFor returns true when the socket has frames or woken reports true
// (whoever makes it true calls Wake afterwards), false when timeout passes
// (a negative timeout waits without limit), or ErrClosed once Close was
// called. One goroutine waits at a time, the one that receives: WaitFor
// reads the receive side's state.
func (p *Poller) WaitFor(timeout time.Duration, woken func() bool) (bool, error) {
	ready := func() bool { return (woken != nil && woken()) || p.s.Readable() }
	if ready() {
		return true, nil
	}
	var dl time.Time
	if timeout >= 0 {
		dl = time.Now().Add(timeout)
	}
	for range maxRewaits {
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
		// A Wake that woken no longer reports: wait again, until our deadline.
	}
	return false, nil
}

// maxRewaits bounds the spurious wake-ups one WaitFor absorbs; past it,
// WaitFor returns false as if its time had passed.
const maxRewaits = 1 << 20

// Wake makes the goroutine waiting in WaitFor check again.
func (p *Poller) Wake() { p.file.SetReadDeadline(time.Unix(1, 0)) }

func (p *Poller) closedOr(err error) error {
	if p.shut.Load() || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("afpacket: wait: %w", err)
}

// Close wakes the waiter with ErrClosed and closes the duplicate
// descriptor (not the socket).
func (p *Poller) Close() error {
	p.shut.Store(true)
	return p.file.Close()
}
