package idle

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Relay carries a wake-up from a hot loop to goroutines through the
// kernel. A hot loop holds its P while it yields or spins (LockThread), so
// a goroutine it readies directly (a channel send) lands in that P's
// runnext slot, which another P takes only after sleeping in usleep(3)
// (runtime.runqgrab), a sleep that Linux's default timer slack
// (timer_slack_ns, 50 µs) stretches, on every wake-up. Kick instead writes
// an eventfd that Run's goroutine reads through the netpoller: the kernel
// wakes the thread parked in epoll, and fire runs on an ordinary P, whose
// own runnext then holds what fire readies, run as soon as Run parks
// again. (netpoll.Waiter's Wake, a read deadline in the past, would not
// do: the runtime readies the waiter on the caller's P, the hot loop's, as
// a channel send does.)
//
// Shared words, all sync/atomic (sequentially consistent):
//
//	pending  1: a Kick since Run last fired. Kick stores it, then loads
//	         parked; Run swaps it to 0 after storing parked = 1.
//	parked   1 while Run reads (or is about to read) the eventfd. Only
//	         Run stores it. A Kick writes the eventfd only while it is 1,
//	         so Kicks while Run fires cost one store and one load.
//
// Either Run's swap sees a Kick's pending, or the Kick sees parked = 1 and
// writes the eventfd: no Kick is lost.
type Relay struct {
	f       *os.File        // the eventfd, non-blocking, in the netpoller
	rc      syscall.RawConn // f's, made once: Kick allocates nothing
	write   func(fd uintptr) bool
	fire    func()
	pending atomic.Uint32
	parked  atomic.Uint32
	// writes and fires count eventfd writes (Kick) and fire calls (Run).
	writes atomic.Uint64
	fires  atomic.Uint64
}

// RelayStats count a Relay's work.
type RelayStats struct {
	Writes uint64 // eventfd writes (Kicks that found Run parked)
	Fires  uint64 // fire calls
}

// NewRelay makes a Relay whose Run calls fire after Kicks.
func NewRelay(fire func()) (*Relay, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("idle: relay: %w", os.NewSyscallError("eventfd", err))
	}
	r := &Relay{f: os.NewFile(uintptr(fd), "relay"), fire: fire}
	if r.rc, err = r.f.SyscallConn(); err != nil {
		r.f.Close()
		return nil, fmt.Errorf("idle: relay: %w", err)
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	r.write = func(fd uintptr) bool {
		unix.Write(int(fd), one[:]) // EAGAIN: the counter is full, Run wakes anyway
		return true
	}
	return r, nil
}

// Kick asks Run to call fire (any goroutine; never blocks). It makes a
// system call only when Run is parked; after Close it does nothing.
func (r *Relay) Kick() {
	r.pending.Store(1)
	if r.parked.Load() == 0 {
		return
	}
	if r.rc.Write(r.write) == nil {
		r.writes.Add(1)
	}
}

// Run calls fire once after each Kick or run of Kicks, until ctx ends or
// Close. Run it on one goroutine.
func (r *Relay) Run(ctx context.Context) {
	defer context.AfterFunc(ctx, func() { r.f.SetReadDeadline(time.Unix(1, 0)) })()
	var b [8]byte
	for ctx.Err() == nil {
		r.parked.Store(1)
		if r.pending.Swap(0) == 0 {
			if _, err := r.f.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
				continue // ctx ended (the deadline in the past): the loop checks
			} else if err != nil {
				return // closed
			}
			r.pending.Store(0) // the Kicks that wrote it are the ones this fire serves
		}
		r.parked.Store(0)
		r.fires.Add(1)
		r.fire()
	}
}

// Stats returns the counts so far.
func (r *Relay) Stats() RelayStats {
	return RelayStats{Writes: r.writes.Load(), Fires: r.fires.Load()}
}

// Close releases the eventfd: Run returns, and Kicks after it do nothing.
func (r *Relay) Close() error { return r.f.Close() }
