package afpacket

import (
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzReceive hands Receive rings of arbitrary bytes, as a kernel that
// wrote nonsense would leave them: it never panics, hands out only frames
// that lie inside their slot, and a frame ring's Release gives every slot
// it took back to the kernel.
func FuzzReceive(f *testing.F) {
	const slots, size = 4, 128
	frame := make([]byte, slots*size)
	for i := range slots {
		h := frame[i*size:]
		h[0] = unix.TP_STATUS_USER
		h[frameSnaplen] = 20                  // snaplen
		h[frameMac] = byte(txHeaderLen + 2*i) // mac
	}
	f.Add(false, frame)
	block := make([]byte, slots*size)
	block[blockStatusOff] = unix.TP_STATUS_USER
	block[blockNumPkts] = 2
	block[blockFirstPkt] = 48
	block[48+pktNextOff], block[48+pktSnaplen], block[48+pktMac] = 40, 8, 30
	f.Add(true, block)
	f.Fuzz(func(t *testing.T, blocks bool, ring []byte) {
		ring = append(ring[:min(len(ring), slots*size):min(len(ring), slots*size)], make([]byte, slots*size)...)[:slots*size] // a copy: Release writes it
		s := &Socket{rxRing: ring}
		s.rx.blocks = blocks
		s.rx.b = blockRing{nblocks: slots, size: size}
		s.rx.f = frameRing{n: slots, size: size}
		lead := 0 // the slots a frame ring hands out: those user space owns, from 0
		for lead < slots && word32(s.frame(lead), frameStatusOff).Load()&unix.TP_STATUS_USER != 0 {
			lead++
		}
		out := make([][]byte, 3)
		for range 2 * slots {
			n := s.Receive(out)
			if n > len(out) {
				t.Fatalf("Receive handed out %d frames into %d", n, len(out))
			}
			for _, fr := range out[:n] {
				if len(fr) > size {
					t.Fatalf("a frame of %d bytes from slots of %d", len(fr), size)
				}
			}
			s.Release()
			if !blocks && s.rx.f.held != 0 {
				t.Fatalf("%d frames held after Release", s.rx.f.held)
			}
		}
		if !blocks {
			for i := range lead {
				if st := word32(s.frame(i), frameStatusOff).Load(); st&unix.TP_STATUS_USER != 0 {
					t.Fatalf("slot %d still user space's (status %#x) after Receive laps and Release", i, st)
				}
			}
		}
	})
}
