package shm

import (
	"encoding/binary"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapping is one MAP_SHARED view of a ring, checkpoint or blackboard file.
// All unsafe pointer arithmetic of the package lives in this file and in
// futex_unsafe.go. Offsets handed to the accessors are validated once, at
// attach, against the mapping's length; the accessors themselves do not
// re-check them on the hot path.
type mapping struct {
	data     []byte
	writable bool
}

func mapFile(f *os.File, size int, writable, populate bool) (*mapping, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, prot, flags)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	m := &mapping{data: data, writable: writable}
	register(m, f.Name())
	return m, nil
}

func (m *mapping) unmap() error {
	if m.data == nil {
		return nil
	}
	unregister(m)
	err := unix.Munmap(m.data)
	m.data = nil
	if err != nil {
		return os.NewSyscallError("munmap", err)
	}
	return nil
}

// span is the address range [start, end) the mapping occupies (0, 0 once
// unmapped), for Fault.
func (m *mapping) span() (start, end uintptr) {
	if len(m.data) == 0 {
		return 0, 0
	}
	start = uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return start, start + uintptr(len(m.data))
}

// u64 returns the 8-byte aligned shared word at off. Go's sync/atomic
// operations on it are the publication points of the protocol.
func (m *mapping) u64(off uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&m.data[off]))
}

// word is the 8-byte aligned shared word at off as a plain pointer, for
// markWriting and storeRelease.
func (m *mapping) word(off uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&m.data[off]))
}

// u32 returns the 4-byte aligned shared word at off.
func (m *mapping) u32(off uint64) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&m.data[off]))
}

// loadWords copies len(dst) bytes from the mapping at off into dst using
// 64-bit atomic loads, one word at a time. This is the seqlock reader's
// copy. Doing it with atomic loads instead of memmove
//   - orders every payload load before the closing re-check of the slot
//     sequence on weakly ordered CPUs (each load is an acquire), and
//   - keeps the race detector quiet: the copy races with the writer by
//     design, and the sequence re-check throws torn copies away.
//
// On amd64 an atomic load is a plain MOV, so this costs next to nothing.
// off must be 8-aligned and round_up(len(dst), 8) bytes must be mapped at
// off (slot strides and arena reservations guarantee it).
func (m *mapping) loadWords(dst []byte, off uint64) {
	p := unsafe.Pointer(&m.data[off])
	n := len(dst)
	i := 0
	if n >= 8 {
		// dst[:n&^7] is in bounds: store each word through a pointer,
		// without a bounds check per word (uint64 holds no pointers, so an
		// unaligned dst is fine for checkptr and for amd64 and arm64).
		d := unsafe.Pointer(unsafe.SliceData(dst))
		for ; i+8 <= n; i += 8 {
			*(*uint64)(unsafe.Add(d, i)) = atomic.LoadUint64((*uint64)(unsafe.Add(p, i)))
		}
	}
	if i < n {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], atomic.LoadUint64((*uint64)(unsafe.Add(p, i))))
		copy(dst[i:], tail[:n-i])
	}
}

// storeBytes copies src into the mapping at off with a plain memmove. It is
// the seqlock writer's copy: it runs between the store of the "writing"
// marker (an atomic swap, a full barrier) and the atomic store of the new
// sequence, which orders it for readers. The mapping lies outside the Go
// heap, so the race detector does not instrument it.
func (m *mapping) storeBytes(off uint64, src []byte) {
	copy(m.data[off:off+uint64(len(src))], src)
}

// bytesOf views a pointer-free value as its bytes without copying.
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// sliceBytes views a slice of pointer-free values as its bytes.
func sliceBytes[T any](vs []T) []byte {
	if len(vs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&vs[0])), uintptr(len(vs))*unsafe.Sizeof(vs[0]))
}

// sizeOf returns the size of T in bytes.
func sizeOf[T any]() uintptr {
	var zero T
	return unsafe.Sizeof(zero)
}
