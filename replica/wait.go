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
// runs on a locked OS thread of its own (pinned with Pin), or on a Loop's:
//
//	WaitAdaptive  the default: yield with sched_yield for a while (a
//	              mirror or a Loop for idle.DefaultYieldFor, the sender
//	              for senderYields polls; each for idle.HotYieldFor while
//	              hot, its work filling 1/idle.HotShare of its time), then
//	              block; it does not spin (idle.DefaultSpinFor is 0)
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

// The sender's adaptive wait on its ring, counted in polls of write_seq
// (shm.Adaptive): no spin, for the reason idle.DefaultSpinFor gives, then
// senderYields polls with a sched_yield between two, then the ring's
// futex. The mirror's adaptive phases are counted in time instead
// (idle.DefaultYieldFor): its Idler reads the clock, a ring wait does not.
const (
	senderSpins  = 0
	senderYields = 200
)

// RingWait is the strategy a server's sender waits on its ring with in
// mode m. A reader that should wait as the replica loops do (the bench's
// pinger and echo, matching the serve and mirror they run with) takes it.
func RingWait(m WaitMode) shm.WaitStrategy { return ringWait(m) }

// ringWait is the sender's strategy on the served ring for mode m: spin
// polls without pause, yield calls sched_yield between polls and never
// sleeps, block polls 16 times and then sleeps on the ring's futex (which
// the producer's publish wakes), adaptive as senderSpins says.
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
