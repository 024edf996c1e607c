package afpacket

import (
	"sync/atomic"
	"unsafe"
)

// Offsets of the status words in the rings (linux/if_packet.h).
const (
	blockStatusOff = 8 // tpacket_block_desc.hdr.bh1.block_status
	frameStatusOff = 0 // tpacket2_hdr.tp_status
)

// word32 returns the 32-bit word at b[off:] that the kernel shares with
// us (a status word, a block's num_pkts) for atomic access. They are
// naturally aligned (blocks and frames start on page or TPACKET_ALIGNMENT
// boundaries of an mmap'd ring), and the kernel reads and writes them as
// whole words.
func word32(b []byte, off int) *atomic.Uint32 {
	_ = b[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&b[off]))
}

// word64 returns the 64-bit word at b[off:] (a block header's seq_num,
// 8-aligned in a page-aligned block) for atomic loads.
func word64(b []byte, off int) *atomic.Uint64 {
	_ = b[off+7]
	return (*atomic.Uint64)(unsafe.Pointer(&b[off]))
}
