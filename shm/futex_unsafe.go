package shm

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations (linux/futex.h). The private flag (128) is deliberately
// absent: sleepers and wakers are different processes.
const (
	futexOpWait = 0
	futexOpWake = 1
)

// futexWait sleeps while the shared word at off still holds val, for at most
// d. It is a cross-process futex (no FUTEX_PRIVATE_FLAG): the word lives in
// a MAP_SHARED mapping. Spurious wake-ups, EAGAIN (the word changed) and
// timeouts all simply return; callers re-check their condition.
func (m *mapping) futexWait(off uint64, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&m.data[off])),
		futexOpWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every process sleeping on the shared word at off.
func (m *mapping) futexWake(off uint64) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&m.data[off])),
		futexOpWake, uintptr(1<<31-1), 0, 0, 0)
}

// schedYield gives the thread's CPU to any other runnable thread
// (sched_yield(2), which cannot fail on Linux). A raw system call: it
// returns at once or after others ran, never blocks, so the runtime need
// not hand the P to another thread meanwhile.
func schedYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
