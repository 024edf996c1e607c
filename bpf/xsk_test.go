package bpf

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testXSK is a minimal receive-only AF_XDP socket in copy mode, enough to
// prove that redirected frames reach an RX ring. Test code only.
type testXSK struct {
	fd       int
	umem     []byte
	fillMem  []byte
	rxMem    []byte
	fillProd *uint32
	rxProd   *uint32
	rxCons   *uint32
	fillDesc unsafe.Pointer
	rxDesc   unsafe.Pointer
	fillIdx  uint32 // next fill producer index
	rxIdx    uint32 // next RX consumer index
}

const (
	xskFrames    = 64
	xskFrameSize = 2048
	xskRing      = 64 // fill, completion and RX ring sizes
)

// newTestXSK creates a socket bound to queue of ifindex; call it from the
// namespace of the interface.
func newTestXSK(ifindex, queue int) (_ *testXSK, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket(AF_XDP): %w", err)
	}
	s := &testXSK{fd: fd}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.umem, err = unix.Mmap(-1, 0, xskFrames*xskFrameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap umem: %w", err)
	}
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))),
		Len:  uint64(len(s.umem)),
		Size: xskFrameSize,
	}
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0); e != 0 {
		return nil, fmt.Errorf("XDP_UMEM_REG: %w", e)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, xskRing); err != nil {
			return nil, fmt.Errorf("setsockopt(%d): %w", opt, err)
		}
	}
	var off unix.XDPMmapOffsets
	offLen := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&offLen)), 0); e != 0 {
		return nil, fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	s.fillMem, err = unix.Mmap(fd, unix.XDP_UMEM_PGOFF_FILL_RING, int(off.Fr.Desc)+xskRing*8,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap fill ring: %w", err)
	}
	s.rxMem, err = unix.Mmap(fd, unix.XDP_PGOFF_RX_RING, int(off.Rx.Desc)+xskRing*16,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap rx ring: %w", err)
	}
	fb, rb := unsafe.Pointer(&s.fillMem[0]), unsafe.Pointer(&s.rxMem[0])
	s.fillProd = (*uint32)(unsafe.Add(fb, off.Fr.Producer))
	s.fillDesc = unsafe.Add(fb, off.Fr.Desc)
	s.rxProd = (*uint32)(unsafe.Add(rb, off.Rx.Producer))
	s.rxCons = (*uint32)(unsafe.Add(rb, off.Rx.Consumer))
	s.rxDesc = unsafe.Add(rb, off.Rx.Desc)
	for i := range xskRing {
		s.fill(uint64(i * xskFrameSize))
	}
	sa := &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("bind AF_XDP to ifindex %d queue %d: %w", ifindex, queue, err)
	}
	return s, nil
}

func (s *testXSK) fill(addr uint64) {
	*(*uint64)(unsafe.Add(s.fillDesc, uintptr(s.fillIdx%xskRing)*8)) = addr
	s.fillIdx++
	atomic.StoreUint32(s.fillProd, s.fillIdx)
}

// FD is the socket for Program.SetSocket.
func (s *testXSK) FD() int { return s.fd }

// Recv returns copies of the frames received until want frames arrived or
// timeout passed, whichever is first.
func (s *testXSK) Recv(want int, timeout time.Duration) ([][]byte, error) {
	var out [][]byte
	deadline := time.Now().Add(timeout)
	for len(out) < want {
		for prod := atomic.LoadUint32(s.rxProd); s.rxIdx != prod && len(out) < want; s.rxIdx++ {
			d := unsafe.Add(s.rxDesc, uintptr(s.rxIdx%xskRing)*16)
			addr, n := *(*uint64)(d), *(*uint32)(unsafe.Add(d, 8))
			out = append(out, append([]byte(nil), s.umem[addr:addr+uint64(n)]...))
			atomic.StoreUint32(s.rxCons, s.rxIdx+1)
			s.fill(addr &^ (xskFrameSize - 1))
		}
		left := time.Until(deadline)
		if len(out) >= want || left <= 0 {
			break
		}
		ms := min(int(left/time.Millisecond)+1, 50)
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, ms); err != nil && !errors.Is(err, unix.EINTR) {
			return out, fmt.Errorf("poll: %w", err)
		}
	}
	return out, nil
}

// Stats returns the socket's XDP_STATISTICS.
func (s *testXSK) Stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	l := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return st, e
	}
	return st, nil
}

func (s *testXSK) Close() {
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
	for _, m := range [][]byte{s.fillMem, s.rxMem, s.umem} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
	s.fillMem, s.rxMem, s.umem = nil, nil, nil
}
