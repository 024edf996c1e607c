package afpacket

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Fields of tpacket_block_desc (hdr.bh1) and tpacket3_hdr read by the block
// ring's Receive, after the block's status handed it to user space.
const (
	blockNumPkts  = 12 // bh1.num_pkts
	blockFirstPkt = 16 // bh1.offset_to_first_pkt
	blockSeqNum   = 24 // bh1.seq_num (u64): the kernel numbers the blocks it opens 1, 2, ...
	pktNextOff    = 0  // tp_next_offset
	pktSnaplen    = 12 // tp_snaplen
	pktMac        = 24 // tp_mac (u16): the frame's offset from the header
)

// blockRing is the receive side of a TPACKET_V3 ring (BlockRing), owned by
// the receiving goroutine.
type blockRing struct {
	nblocks, size int
	blk           int    // the block Receive reads next (the kernel fills them in order)
	open          bool   // blk is ours and partly handed out
	left, off     int    // packets of blk still to hand out; the next one's offset
	first, held   int    // blocks handed out completely, from first, until Release
	seq           uint64 // bh1.seq_num of the last block opened (0: none yet)
}

func (s *Socket) block(i int) []byte {
	z := s.rx.b.size
	return s.rxRing[i*z : (i+1)*z : (i+1)*z]
}

// receiveBlocks is Receive on a block ring.
func (s *Socket) receiveBlocks(frames [][]byte) (n, nbytes int) {
	r := &s.rx.b
	for n < len(frames) && (r.open || s.openBlock()) {
		b := s.block(r.blk)
		h := r.off
		snap := int(binary.NativeEndian.Uint32(b[h+pktSnaplen:]))
		start := h + int(binary.NativeEndian.Uint16(b[h+pktMac:]))
		if start+snap <= len(b) {
			frames[n] = b[start : start+snap : start+snap]
			n++
			nbytes += snap
		}
		next := int(binary.NativeEndian.Uint32(b[h+pktNextOff:]))
		r.off += next
		// The kernel zeroes the last packet's next_offset.
		if r.left--; r.left == 0 || next == 0 || r.off+pktMac+2 > len(b) {
			r.finish()
		}
	}
	return n, nbytes
}

// openBlock takes the next block when the kernel has handed it over,
// skipping empty ones; false when there is none (or all are held).
func (s *Socket) openBlock() bool {
	r := &s.rx.b
	for r.held < r.nblocks {
		b := s.block(r.blk)
		if word32(b, blockStatusOff).Load()&unix.TP_STATUS_USER == 0 {
			return false
		}
		r.left = int(binary.NativeEndian.Uint32(b[blockNumPkts:]))
		r.off = int(binary.NativeEndian.Uint32(b[blockFirstPkt:]))
		r.seq = binary.NativeEndian.Uint64(b[blockSeqNum:])
		r.open = true
		if r.left > 0 && r.off+pktMac+2 <= len(b) {
			return true
		}
		r.finish()
	}
	return false
}

// finish moves the open block to the blocks awaiting Release.
func (r *blockRing) finish() {
	if r.held == 0 {
		r.first = r.blk
	}
	r.held++
	r.open = false
	r.blk = (r.blk + 1) % r.nblocks
}

// releaseBlocks is Release on a block ring: a block partly handed out
// stays until its last frame is. It returns the blocks released.
func (s *Socket) releaseBlocks() int {
	r := &s.rx.b
	n := r.held
	for i := range n {
		word32(s.block((r.first+i)%r.nblocks), blockStatusOff).Store(unix.TP_STATUS_KERNEL)
	}
	r.held = 0
	return n
}

// readableBlocks is Readable on a block ring.
func (s *Socket) readableBlocks() bool {
	r := &s.rx.b
	if r.open {
		return true
	}
	if r.held == r.nblocks {
		return false
	}
	return word32(s.block(r.blk), blockStatusOff).Load()&unix.TP_STATUS_USER != 0
}

// fillingBlocks is Filling on a block ring. It reads the kernel's own
// block header while the kernel writes it: bh1.seq_num tells a block the
// kernel opened after the last one Receive took (the next number) from one
// that still holds a past lap's header, and bh1.num_pkts, which the kernel
// raises frame by frame, is only compared with zero.
func (s *Socket) fillingBlocks() bool {
	r := &s.rx.b
	if r.open || r.held == r.nblocks {
		return false
	}
	b := s.block(r.blk)
	if word32(b, blockStatusOff).Load()&unix.TP_STATUS_USER != 0 {
		return false // handed over: Readable
	}
	return word64(b, blockSeqNum).Load() == r.seq+1 && word32(b, blockNumPkts).Load() != 0
}
