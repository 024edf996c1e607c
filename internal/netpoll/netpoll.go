package netpoll

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrClosed is returned to a waiter once Close was called.
var ErrClosed = errors.New("netpoll: closed")

// Waiter owns a non-blocking descriptor registered with Go's poller. One
// goroutine waits on it at a time (Go's poller parks one reader of a
// descriptor).
type Waiter struct {
	file *os.File
	rc   syscall.RawConn
	shut atomic.Bool

	// The one waiter's state: built once, so that a wait allocates nothing.
	ready  func() bool
	ok     bool
	readFn func(uintptr) bool
	// control's: ctl (built once) calls ctlFn.
	ctl   func(uintptr)
	ctlFn func(int)
}

// New takes ownership of fd, which must be non-blocking and pollable.
func New(fd int, name string) (*Waiter, error) {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netpoll: %s: %w", name, err)
	}
	w := &Waiter{file: f, rc: rc}
	w.ctl = func(fd uintptr) { w.ctlFn(int(fd)) }
	w.readFn = func(uintptr) bool {
		w.ok = w.ready()
		return w.ok
	}
	return w, nil
}

// maxRewaits bounds the spurious wake-ups one Wait absorbs; past it, Wait
// returns false as if its time had passed.
const maxRewaits = 1 << 20

// Wait returns true once ready reports true (it is checked first, after
// every readiness of the descriptor and after every Wake), false when
// timeout passes (a negative timeout waits without limit), or ErrClosed
// once Close was called.
func (w *Waiter) Wait(timeout time.Duration, ready func() bool) (bool, error) {
	if ready() {
		return true, nil
	}
	w.ready = ready
	var dl time.Time
	if timeout >= 0 {
		dl = time.Now().Add(timeout)
	}
	for range maxRewaits {
		// Wake moves the deadline to the past: set ours before checking,
		// so that a Wake after the check is not lost.
		if err := w.file.SetReadDeadline(dl); err != nil {
			return false, w.closedOr(err)
		}
		w.ok = false
		err := w.rc.Read(w.readFn)
		switch {
		case w.ok:
			return true, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return false, w.closedOr(err)
		case !dl.IsZero() && !time.Now().Before(dl):
			return false, nil
		}
		// A Wake that ready no longer reports: wait again, until our
		// deadline.
	}
	return false, nil
}

// control runs f with the descriptor, which Close cannot close meanwhile;
// after Close it returns ErrClosed without running f. It allocates
// nothing when f is built once.
func (w *Waiter) control(f func(fd int)) error {
	if w.shut.Load() {
		return ErrClosed
	}
	w.ctlFn = f
	err := w.rc.Control(w.ctl)
	w.ctlFn = nil
	if err != nil {
		return w.closedOr(err)
	}
	return nil
}

// Wake makes the goroutine in Wait check ready again.
func (w *Waiter) Wake() { w.file.SetReadDeadline(time.Unix(1, 0)) }

func (w *Waiter) closedOr(err error) error {
	if w.shut.Load() || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("netpoll: wait: %w", err)
}

// Close wakes the waiter with ErrClosed and closes the descriptor.
func (w *Waiter) Close() error {
	w.shut.Store(true)
	return w.file.Close()
}
