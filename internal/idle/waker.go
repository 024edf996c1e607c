package idle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by a Waker used after Close.
var ErrClosed = errors.New("idle: closed")

// Waker lets other goroutines wake a loop parked in Idler.Idle: an eventfd
// the parked loop polls beside its descriptors, written only when the loop
// is parked, so a busy loop costs its notifiers one atomic add and load.
type Waker struct {
	// mu guards fd against Close while a notifier writes it (taken only on
	// the parked path, so a busy loop's notifiers never touch it).
	mu sync.RWMutex
	fd int // eventfd (EFD_NONBLOCK); -1 once closed
	// gen counts notifications. Written by notifiers (Add, any goroutine),
	// read by the loop (Load): a change since the loop's Round means work
	// may have arrived that its polls did not see.
	gen atomic.Uint64
	// parked is 1 while the loop is in, or about to enter, ppoll. Written
	// by the loop only (Store); read by notifiers (Load) after their Add to
	// gen, to decide whether to write the eventfd.
	parked atomic.Uint32
	// writes counts eventfd writes (notifier-side; statistics).
	writes atomic.Uint64
}

// NewWaker makes a Waker.
func NewWaker() (*Waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("idle: waker: %w", os.NewSyscallError("eventfd", err))
	}
	return &Waker{fd: fd}, nil
}

// Notify tells the loop that work is there (call it after making the work
// visible: a frame queued, a flag set). It makes a system call only when
// the loop is parked. After Close it does nothing.
func (w *Waker) Notify() {
	w.gen.Add(1)
	if w.parked.Load() == 0 {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	w.mu.RLock()
	if w.fd >= 0 {
		unix.Write(w.fd, one[:]) // EAGAIN: the counter is full, a wake-up is pending anyway
		w.writes.Add(1)
	}
	w.mu.RUnlock()
}

// drain empties the eventfd after the loop woke from it.
func (w *Waker) drain() {
	var b [8]byte
	unix.Read(w.fd, b[:])
}

// Close releases the eventfd; later calls return ErrClosed. Notify may
// still be called, and does nothing. The loop must not be in Idle.
func (w *Waker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return ErrClosed
	}
	err := unix.Close(w.fd)
	w.fd = -1
	return err
}
