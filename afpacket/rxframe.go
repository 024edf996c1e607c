package afpacket

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Fields of tpacket2_hdr read by the frame ring's Receive, after the
// frame's status handed it to user space.
const (
	frameSnaplen = 8  // tp_snaplen
	frameMac     = 12 // tp_mac (u16): the Ethernet frame's offset from the header
)

// frameRing is the receive side of a TPACKET_V2 ring (FrameRing), owned
// by the receiving goroutine. The kernel fills the frames in ring order
// and hands each over on its own; Receive takes them in the same order.
type frameRing struct {
	n, size int // frames, bytes each (frames are contiguous: blocks hold whole frames)
	next    int // the frame Receive looks at next
	held    int // frames handed out before next, not yet released
}

func (s *Socket) frame(i int) []byte {
	z := s.rx.f.size
	return s.rxRing[i*z : (i+1)*z : (i+1)*z]
}

// receiveFrames is Receive on a frame ring.
func (s *Socket) receiveFrames(frames [][]byte) (n, nbytes int) {
	r := &s.rx.f
	for n < len(frames) && r.held < r.n {
		f := s.frame(r.next)
		if word32(f, frameStatusOff).Load()&unix.TP_STATUS_USER == 0 {
			break
		}
		snap := int(binary.NativeEndian.Uint32(f[frameSnaplen:]))
		start := int(binary.NativeEndian.Uint16(f[frameMac:]))
		if start >= txHeaderLen && start+snap <= len(f) {
			frames[n] = f[start : start+snap : start+snap]
			n++
			nbytes += snap
		}
		r.held++
		if r.next++; r.next == r.n {
			r.next = 0
		}
	}
	return n, nbytes
}

// releaseFrames is Release on a frame ring: every frame handed out goes
// back to the kernel, in ring order. It returns 0 (a frame ring has no
// blocks to count).
func (s *Socket) releaseFrames() int {
	r := &s.rx.f
	i := r.next - r.held
	if i < 0 {
		i += r.n
	}
	for range r.held {
		word32(s.frame(i), frameStatusOff).Store(unix.TP_STATUS_KERNEL)
		if i++; i == r.n {
			i = 0
		}
	}
	r.held = 0
	return 0
}

// readableFrames is Readable on a frame ring.
func (s *Socket) readableFrames() bool {
	r := &s.rx.f
	return r.held < r.n && word32(s.frame(r.next), frameStatusOff).Load()&unix.TP_STATUS_USER != 0
}
