package xdp

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// rxState is the receive side's state (owned by the receiving goroutine).
type rxState struct {
	pending, index uint32 // frames handed out by Receive, not yet released
	frames, bytes  counter
	wakeups        counter
	busyPolls      counter
	// lastBusyPoll is when the last busy-poll syscall was made (monotonic
	// ns since busyPollEpoch, plus one; 0: none yet): stored by Receive,
	// loaded by Pending from any goroutine.
	lastBusyPoll atomic.Int64
	pollWakeups  atomic.Uint64 // by pollers, from any goroutine
}

// counter has one writer and any number of readers (Stats).
type counter struct{ v atomic.Uint64 }

func (c *counter) add(n uint64) { c.v.Store(c.v.Load() + n) }
func (c *counter) load() uint64 { return c.v.Load() }

// txState is the send side's state (owned by the sending goroutine).
type txState struct {
	free     []uint64 // transmit frames neither queued nor in flight
	reserved []uint64 // frames of the entries ReserveTX claimed
	index    uint32   // TX ring index of reserved[0]
	frames   counter
	bytes    counter
	kicks    counter
	full     counter // ReserveTX calls that got fewer entries than asked
}

// Receive hands out up to len(frames) received frames, each a slice of the
// UMEM valid until Release. It never blocks. With Config.BusyPoll, an
// empty RX ring makes it call recvfrom once (MSG_DONTWAIT), which busy-
// polls the device's queue in the kernel, and look again.
func (s *Socket) Receive(frames [][]byte) int {
	if s.rx.pending != 0 {
		s.Release()
	}
	n, idx := s.RX.Peek()
	if n == 0 && s.busyPollDue(time.Time{}, true) {
		s.rx.busyPolls.add(1)
		s.wakeRX()
		n, idx = s.RX.Peek()
	}
	n = min(n, uint32(len(frames)))
	for i := range n {
		d := s.RX.Get(idx + i)
		frames[i] = s.umem[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)]
		s.rx.bytes.add(uint64(d.Len))
	}
	s.rx.pending, s.rx.index = n, idx
	s.rx.frames.add(uint64(n))
	return int(n)
}

// busyPollEpoch is the origin of rxState.lastBusyPoll.
var busyPollEpoch = time.Now()

// busyPollDue reports whether an empty Receive makes a busy-poll syscall
// at now (Config.BusyPollGap; zero: it reads the clock, and only when a
// gap is set, for an empty poll is what a yielding loop does most); take
// records that it does.
func (s *Socket) busyPollDue(now time.Time, take bool) bool {
	if s.cfg.BusyPoll <= 0 {
		return false
	}
	if s.cfg.BusyPollGap <= 0 {
		return true
	}
	if now.IsZero() {
		now = time.Now()
	}
	at := int64(now.Sub(busyPollEpoch)) + 1 // never 0: 0 is "no busy poll yet"
	if last := s.rx.lastBusyPoll.Load(); last != 0 && at-last < int64(s.cfg.BusyPollGap) {
		return false
	}
	if take {
		s.rx.lastBusyPoll.Store(at)
	}
	return true
}

// Pending reports, without a system call and from any goroutine, whether
// a Receive would have something to do at now: frames in the RX ring, or
// a busy-poll syscall due (Config.BusyPoll). now is the caller's reading
// of the clock (a loop polling many sockets reads it once).
func (s *Socket) Pending(now time.Time) bool { return s.Readable() || s.busyPollDue(now, false) }

// Release gives the frames of the last Receive back to the kernel (through
// the fill ring) and wakes the kernel if it asks for it.
func (s *Socket) Release() {
	n := s.rx.pending
	if n == 0 {
		return
	}
	// A receive frame is always in exactly one place (fill ring, kernel,
	// RX ring or here), and the fill ring has room for all of them.
	got, fidx := s.Fill.Reserve(n)
	mask := ^uint64(s.cfg.FrameSize - 1)
	for i := range got {
		s.Fill.Set(fidx+i, s.RX.Get(s.rx.index+i).Addr&mask)
	}
	s.RX.Release(n)
	s.Fill.Notify()
	s.rx.pending = 0
	if s.Fill.NeedWakeup() {
		s.rx.wakeups.add(1)
		s.wakeRX()
	}
}

// wakeRX makes the kernel look at the fill ring (a zero-copy driver waits
// for that when the fill ring ran empty).
func (s *Socket) wakeRX() {
	unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
}

// Readable reports whether received frames wait in the RX ring. It reads
// only the shared indices, so any goroutine may call it while another
// receives.
func (s *Socket) Readable() bool {
	return s.RX.ring.producer.Load() != s.RX.ring.consumer.Load()
}

// Complete moves the frames the kernel finished sending back to the free
// list and returns how many.
func (s *Socket) Complete() int {
	n, idx := s.Completion.Peek()
	for i := range n {
		s.tx.free = append(s.tx.free, s.Completion.Get(idx+i))
	}
	if n > 0 {
		s.Completion.Release(n)
	}
	return int(n)
}

// ReserveTX claims up to n transmit frames and TX ring entries and returns
// how many; fill them through TXFrame and queue them with SubmitTX.
func (s *Socket) ReserveTX(n int) int {
	s.Complete()
	k := min(n, len(s.tx.free))
	got, idx := s.TX.Reserve(uint32(k))
	if int(got) < n {
		s.tx.full.add(1)
	}
	f := len(s.tx.free) - int(got)
	s.tx.reserved = append(s.tx.reserved[:0], s.tx.free[f:]...)
	s.tx.free = s.tx.free[:f]
	s.tx.index = idx
	return int(got)
}

// TXFrame is reserved frame i (a whole UMEM frame) to write a packet into.
func (s *Socket) TXFrame(i int) []byte {
	a := s.tx.reserved[i]
	return s.umem[a : a+uint64(s.cfg.FrameSize) : a+uint64(s.cfg.FrameSize)]
}

// SubmitTX queues the first len(lens) reserved frames, lens[i] bytes each,
// returns the other reserved frames, and kicks the kernel if it needs it.
func (s *Socket) SubmitTX(lens []int) error {
	n := len(lens)
	if n > len(s.tx.reserved) {
		return fmt.Errorf("xdp: submit %d frames, %d reserved", n, len(s.tx.reserved))
	}
	for i, l := range lens {
		s.TX.Set(s.tx.index+uint32(i), Desc{Addr: s.tx.reserved[i], Len: uint32(l)})
		s.tx.bytes.add(uint64(l))
	}
	// Unused entries were never published: take them back.
	s.TX.local -= uint32(len(s.tx.reserved) - n)
	s.tx.free = append(s.tx.free, s.tx.reserved[n:]...)
	s.tx.reserved = s.tx.reserved[:0]
	if n == 0 {
		return nil
	}
	s.TX.Notify()
	s.tx.frames.add(uint64(n))
	return s.Kick()
}

// Kick asks the kernel to send what the TX ring holds, when it needs a
// syscall for that (always without need_wakeup, and in copy mode).
//
// In copy mode one sendto transmits at most 32 frames and returns EAGAIN
// while more wait in the TX ring: Kick calls again, so that everything
// submitted leaves now and not at the next kick. It counts on EAGAIN alone
// (kernels before 6.x do not publish the ring's consumer index between
// those calls) and is bounded by the frames queued: one call per 32 of
// them, and two more.
func (s *Socket) Kick() error {
	if !s.cfg.NoNeedWakeup && !s.TX.NeedWakeup() {
		return nil
	}
	calls := int(s.txQueued())/32 + 2
	for calls > 0 {
		s.tx.kicks.add(1)
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case unix.EAGAIN:
			if s.txQueued() == 0 {
				return nil
			}
			calls--
			continue // the kernel's per-call budget ran out
		case 0, unix.EBUSY, unix.ENOBUFS:
			return nil // sent, or the device is busy: the next kick goes on
		case unix.EINTR:
			continue
		case unix.ENETDOWN, unix.ENXIO:
			return fmt.Errorf("xdp: interface %d: %w", s.ifindex, os.NewSyscallError("sendto", e))
		}
		return os.NewSyscallError("sendto", e)
	}
	return nil
}

// txQueued is how many TX ring entries the kernel has not taken yet.
func (s *Socket) txQueued() uint32 { return s.TX.local - s.TX.consumer.Load() }

// Stats are a socket's counters: ours and the kernel's XDP_STATISTICS.
type Stats struct {
	RXFrames, RXBytes uint64 // frames handed out by Receive
	TXFrames, TXBytes uint64 // frames queued by SubmitTX
	Kicks             uint64 // sendto calls to make the kernel transmit
	FillWakeups       uint64 // recvfrom calls to make the kernel refill
	TXFull            uint64 // ReserveTX calls that got fewer frames than asked
	BusyPolls         uint64 // recvfrom calls of Receive on an empty RX ring (Config.BusyPoll)

	RXDropped      uint64 // kernel: frames dropped (no frame to receive into, ...)
	RXInvalid      uint64 // kernel: invalid fill descriptors
	TXInvalid      uint64 // kernel: invalid TX descriptors
	RXRingFull     uint64 // kernel: RX ring was full
	FillRingEmpty  uint64 // kernel: fill ring was empty
	TXRingEmptyOps uint64 // kernel: sendto found the TX ring empty
}

// Stats returns the socket's counters; any goroutine may call it while the
// socket is open.
func (s *Socket) Stats() (Stats, error) {
	if s.fd < 0 {
		return Stats{}, ErrClosed
	}
	k, err := xdpStatistics(s.fd)
	if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return Stats{}, err
	}
	return Stats{
		RXFrames: s.rx.frames.load(), RXBytes: s.rx.bytes.load(),
		TXFrames: s.tx.frames.load(), TXBytes: s.tx.bytes.load(),
		Kicks: s.tx.kicks.load(), FillWakeups: s.rx.wakeups.load() + s.rx.pollWakeups.Load(), TXFull: s.tx.full.load(),
		BusyPolls: s.rx.busyPolls.load(),
		RXDropped: k.Rx_dropped, RXInvalid: k.Rx_invalid_descs, TXInvalid: k.Tx_invalid_descs,
		RXRingFull: k.Rx_ring_full, FillRingEmpty: k.Rx_fill_ring_empty_descs, TXRingEmptyOps: k.Tx_ring_empty_descs,
	}, nil
}
