package xdp

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const needWakeup = unix.XDP_RING_NEED_WAKEUP

// mapRing maps one ring of n entries of entrySize bytes at page offset pgoff.
func mapRing(fd int, off unix.XDPRingOffset, pgoff int64, n, entrySize int) (ring, unsafe.Pointer, error) {
	length := int(off.Desc) + n*entrySize
	mem, err := unix.Mmap(fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, nil, os.NewSyscallError("mmap", err)
	}
	base := unsafe.Pointer(&mem[0])
	r := ring{
		mem:      mem,
		producer: (*atomic.Uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*atomic.Uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*atomic.Uint32)(unsafe.Add(base, off.Flags)),
		mask:     uint32(n - 1),
		size:     uint32(n),
	}
	return r, unsafe.Add(base, off.Desc), nil
}

func mapAddrRing(fd int, off unix.XDPRingOffset, pgoff int64, n int) (ring, []uint64, error) {
	r, p, err := mapRing(fd, off, pgoff, n, 8)
	if err != nil {
		return r, nil, err
	}
	return r, unsafe.Slice((*uint64)(p), n), nil
}

func mapDescRing(fd int, off unix.XDPRingOffset, pgoff int64, n int) (ring, []Desc, error) {
	r, p, err := mapRing(fd, off, pgoff, n, int(unsafe.Sizeof(Desc{})))
	if err != nil {
		return r, nil, err
	}
	return r, unsafe.Slice((*Desc)(p), n), nil
}

// registerUMEM registers area as the socket's UMEM.
func registerUMEM(fd int, area []byte, frameSize int) error {
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(&area[0]))),
		Len:  uint64(len(area)),
		Size: uint32(frameSize),
	}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e == unix.ENOBUFS {
		return fmt.Errorf("%w: %w", ErrUMEMLocked, os.NewSyscallError("setsockopt XDP_UMEM_REG", e))
	}
	if e != 0 {
		return os.NewSyscallError("setsockopt XDP_UMEM_REG", e)
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt),
		uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	if err := getsockopt(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return off, os.NewSyscallError("getsockopt XDP_MMAP_OFFSETS", err)
	}
	return off, nil
}

func xdpStatistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	if err := getsockopt(fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st)); err != nil {
		return st, os.NewSyscallError("getsockopt XDP_STATISTICS", err)
	}
	return st, nil
}
