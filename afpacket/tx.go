package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const frameLenOff = 4 // tpacket2_hdr.tp_len

// txState is the send side's state (owned by the sending goroutine).
type txState struct {
	head     int // the frame ReserveTX looks at first (the kernel sends in order)
	reserved int // frames from head that ReserveTX found free

	frames, bytes, kicks, full, retries counter
}

func (s *Socket) txOff(i int) int { return (i & (s.cfg.TXFrames - 1)) * s.cfg.FrameSize }

// ReserveTX claims up to n free transmit frames, in ring order from the
// head, and returns how many it got (0 when the ring is full: Kick and
// try again later). It does not allocate.
func (s *Socket) ReserveTX(n int) int {
	t := &s.tx
	n = min(n, s.cfg.TXFrames)
	k := 0
	for k < n && word32(s.txRing, s.txOff(t.head+k)+frameStatusOff).Load() == unix.TP_STATUS_AVAILABLE {
		k++
	}
	if k < n {
		t.full.add(1)
	}
	t.reserved = k
	return k
}

// TXFrame is the i-th frame claimed by the last ReserveTX, MaxFrame bytes
// to write an Ethernet frame into.
func (s *Socket) TXFrame(i int) []byte {
	off := s.txOff(s.tx.head+i) + txHeaderLen
	end := off + s.MaxFrame()
	return s.txRing[off:end:end]
}

// ErrNotReserved: SubmitTX was given more frames than ReserveTX claimed.
var ErrNotReserved = errors.New("afpacket: more frames submitted than reserved")

// SubmitTX hands the first len(lens) frames claimed by ReserveTX to the
// kernel, frame i being lens[i] bytes long, and kicks it. The rest of the
// claim lapses. It does not allocate.
func (s *Socket) SubmitTX(lens []int) error {
	t := &s.tx
	if len(lens) > t.reserved {
		return fmt.Errorf("%w: %d of %d", ErrNotReserved, len(lens), t.reserved)
	}
	nbytes := 0
	for i, l := range lens {
		off := s.txOff(t.head + i)
		binary.NativeEndian.PutUint32(s.txRing[off+frameLenOff:], uint32(l))
		// Release: the frame and its length are written before the kernel
		// can see SEND_REQUEST.
		word32(s.txRing, off+frameStatusOff).Store(unix.TP_STATUS_SEND_REQUEST)
		nbytes += l
	}
	t.head = (t.head + len(lens)) & (s.cfg.TXFrames - 1)
	t.reserved = 0
	t.frames.add(uint64(len(lens)))
	t.bytes.add(uint64(nbytes))
	if len(lens) == 0 {
		return nil
	}
	return s.Kick()
}

// Kick makes the kernel send the frames submitted so far, without waiting.
// A kick the device refused for now (ENOBUFS, EAGAIN) leaves the frames
// queued for the next kick and is counted in Stats.TXRetries.
func (s *Socket) Kick() error {
	s.tx.kicks.add(1)
	err := unix.Sendto(s.txfd, nil, unix.MSG_DONTWAIT, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOBUFS):
		s.tx.retries.add(1)
		return nil
	case errors.Is(err, unix.EBADF):
		return ErrClosed
	}
	return os.NewSyscallError("sendto", err)
}

// TXPending is how many submitted frames the kernel has not sent yet.
// It walks the ring: for tests and draining, not the hot path.
func (s *Socket) TXPending() int {
	n := 0
	for i := range s.cfg.TXFrames {
		if word32(s.txRing, s.txOff(i)+frameStatusOff).Load() != unix.TP_STATUS_AVAILABLE {
			n++
		}
	}
	return n
}
