package replica

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/shm"
)

// WaitMode is how the hot loop of a Server (its datagram sender) or of a
// Mirror (its receive loop) waits when a poll found nothing. Each hot loop
// runs on a locked OS thread of its own (pinned with Pin):
//
//	WaitAdaptive  the default: yield with sched_yield (200 µs), then
//	              block (no spin phase: see idle.DefaultSpinFor)
//	WaitBlock     sleep in the kernel: the sender on the ring's futex, the
//	              mirror in ppoll(2) on its transport's descriptors and on
//	              an eventfd its TCP reader writes when it queues a frame
//	WaitYield     poll, sched_yield, poll: holds up when busy threads
//	              outnumber cores; AF_XDP sockets busy-poll
//	WaitSpin      poll without pause: one core per loop
type WaitMode = idle.Mode

// The wait modes.
const (
	WaitAdaptive = idle.Adaptive
	WaitBlock    = idle.Block
	WaitYield    = idle.Yield
	WaitSpin     = idle.Spin
)

// ParseWaitMode parses adaptive, block, yield or spin.
func ParseWaitMode(s string) (WaitMode, error) { return idle.ParseMode(s) }

// WaitModes lists the names ParseWaitMode accepts.
func WaitModes() []string { return idle.Modes() }

// ErrPin is returned for a Pin this process cannot honour.
var ErrPin = errors.New("replica: cannot pin to that CPU")

// Pin binds a hot loop's thread to one CPU.
type Pin struct {
	On  bool // pin (false: the thread runs wherever the kernel puts it)
	CPU int  // the CPU, as the kernel numbers them
}

// check refuses a CPU this process may not run on.
func (p Pin) check() error {
	if !p.On {
		return nil
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return os.NewSyscallError("sched_getaffinity", err)
	}
	if p.CPU < 0 || !set.IsSet(p.CPU) {
		return fmt.Errorf("%w: CPU %d is not one this process may run on (%d allowed)", ErrPin, p.CPU, set.Count())
	}
	return nil
}

func (p Pin) cpu() int {
	if !p.On {
		return -1
	}
	return p.CPU
}

// Sender ring waits, in polls of write_seq: Adaptive's yield phase takes
// about a hundred microseconds, as the mirror's does, and it does not
// spin, for the same reason (idle.DefaultSpinFor).
const (
	senderSpins  = 0
	senderYields = 200
)

// RingWait is the strategy a server's sender waits on its ring with in
// mode m. A reader that should wait as the replica loops do (the bench's
// pinger and echo, matching the serve and mirror they run with) takes it.
func RingWait(m WaitMode) shm.WaitStrategy { return ringWait(m) }

// ringWait is the sender's strategy on the served ring for mode m.
func ringWait(m WaitMode) shm.WaitStrategy {
	switch m {
	case WaitSpin:
		return shm.BusySpin()
	case WaitYield:
		return shm.SpinSchedYield(0)
	case WaitBlock:
		return shm.FutexWait(16)
	}
	return shm.Adaptive(senderSpins, senderYields)
}
