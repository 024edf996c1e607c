package shm

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations (linux/futex.h). The private flag (128) is deliberately
// absent: sleepers and wakers are different processes.
const (
	futexOpWait      = 0
	futexOpWake      = 1
	futexPrivateFlag = 128 // only for words of this process's own memory
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

// sysFutexWaitv is futex_waitv(2) (Linux ≥ 5.16), the same number on every
// architecture.
const sysFutexWaitv = 449

// futexWaitv flags (linux/futex.h): a 32-bit futex, shared between
// processes unless private.
const (
	futex2Size32  = 2
	futex2Private = 128
)

// futexWaiter is struct futex_waitv: the expected value, the word's
// address, its flags.
type futexWaiter struct {
	val      uint64
	uaddr    uint64
	flags    uint32
	reserved uint32
}

// sharedWaiter describes the ring's futex word (in its writable header
// mapping) expecting val.
func (m *mapping) sharedWaiter(off uint64, val uint32) futexWaiter {
	return futexWaiter{val: uint64(val), uaddr: uint64(uintptr(unsafe.Pointer(&m.data[off]))), flags: futex2Size32}
}

// privateWaiter describes a word of this process's heap (it never moves)
// expecting val.
func privateWaiter(word *atomic.Uint32, val uint32) futexWaiter {
	return futexWaiter{val: uint64(val), uaddr: uint64(uintptr(unsafe.Pointer(word))), flags: futex2Size32 | futex2Private}
}

// futexWaitv sleeps until one of the words no longer holds its value, one
// is woken, or d passes. Like futexWait, every outcome simply returns;
// only ENOSYS (a kernel without futex_waitv) is reported. The caller keeps
// the words' memory alive (the mappings, and the heap words it points at).
func futexWaitv(ws []futexWaiter, d time.Duration) error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return os.NewSyscallError("clock_gettime", err)
	}
	ts = unix.NsecToTimespec(ts.Nano() + d.Nanoseconds())
	_, _, errno := unix.Syscall6(sysFutexWaitv, uintptr(unsafe.Pointer(&ws[0])), uintptr(len(ws)), 0,
		uintptr(unsafe.Pointer(&ts)), uintptr(unix.CLOCK_MONOTONIC), 0)
	if errno == unix.ENOSYS {
		return os.NewSyscallError("futex_waitv", errno)
	}
	return nil
}

// futexWakePrivate wakes every thread of this process sleeping on word.
func futexWakePrivate(word *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)),
		futexOpWake|futexPrivateFlag, uintptr(1<<31-1), 0, 0, 0)
}
