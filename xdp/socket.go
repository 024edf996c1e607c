package xdp

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Errors of this package.
var (
	// ErrNotSupported: the kernel has no AF_XDP, or the device refuses the
	// bind mode asked for.
	ErrNotSupported = errors.New("xdp: not supported")
	// ErrBusy: another AF_XDP socket holds the queue (retried first, as a
	// socket closed a moment ago releases its queue asynchronously).
	ErrBusy = errors.New("xdp: queue busy")
	// ErrClosed: the socket was closed.
	ErrClosed = errors.New("xdp: closed")
	// ErrUMEMLocked: the kernel refused to pin the UMEM (XDP_UMEM_REG,
	// ENOBUFS): it is larger than RLIMIT_MEMLOCK allows a process without
	// CAP_IPC_LOCK (see Config.UMEMBytes).
	ErrUMEMLocked = errors.New("xdp: UMEM beyond the locked-memory limit")
)

// BindMode chooses between zero-copy and copy mode.
type BindMode int

const (
	BindAuto     BindMode = iota // zero-copy if the driver can, else copy
	BindCopy                     // copy mode only
	BindZeroCopy                 // zero-copy only
)

func (m BindMode) String() string {
	switch m {
	case BindCopy:
		return "copy"
	case BindZeroCopy:
		return "zero-copy"
	}
	return "auto"
}

// Config sizes and tunes a socket. The zero value is usable.
type Config struct {
	RingSize int // entries of the TX and completion rings, and transmit frames, a power of two (default 4096)
	// RXRingSize is the entries of the fill and RX rings, and the frames
	// received into, a power of two (default 4 × RingSize, at most
	// 65536): the datagrams that wait while the receiver is away
	// (preempted, or behind a burst) before the kernel drops for want of
	// a frame (Stats.FillRingEmpty). A mirror receives what a source
	// sends, so its side is the deeper one.
	RXRingSize int
	FrameSize  int      // UMEM frame size, 2048 or 4096 (default 2048)
	Bind       BindMode // zero-copy, copy or auto (default auto)
	// NoNeedWakeup turns need_wakeup off: the kernel then never waits for a
	// syscall, at the price of a sendto on every transmit.
	NoNeedWakeup bool
	// BusyPoll enables SO_BUSY_POLL for this long per syscall, with
	// SO_PREFER_BUSY_POLL and SO_BUSY_POLL_BUDGET where the kernel has them.
	BusyPoll       time.Duration
	BusyPollBudget int // default 64
	// BusyPollGap is the shortest time between two busy-poll syscalls of
	// Receive on an empty RX ring (default 0: every such Receive makes
	// one). Transports that share a socket among many receivers polled
	// in turn set it: each of N would otherwise make its own syscall in
	// every turn, for the one queue.
	BusyPollGap time.Duration
	BindRetry   time.Duration // how long to retry a busy queue (default 1 s)
}

// UMEMBytes is the memory a socket of c pins: RXRingSize + RingSize
// frames of FrameSize bytes (the defaults where unset).
func (c Config) UMEMBytes() int {
	c.defaults()
	return (c.RXRingSize + c.RingSize) * c.FrameSize
}

func (c *Config) defaults() error {
	if c.RingSize == 0 {
		c.RingSize = 4096
	}
	if c.RXRingSize == 0 {
		c.RXRingSize = min(4*c.RingSize, maxRing)
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	if c.BusyPollBudget == 0 {
		c.BusyPollBudget = 64
	}
	if c.BindRetry == 0 {
		c.BindRetry = time.Second
	}
	if !ringSizeOK(c.RingSize) {
		return fmt.Errorf("xdp: ring size %d: need a power of two in [8, %d]", c.RingSize, maxRing)
	}
	if !ringSizeOK(c.RXRingSize) {
		return fmt.Errorf("xdp: RX ring size %d: need a power of two in [8, %d]", c.RXRingSize, maxRing)
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return fmt.Errorf("xdp: frame size %d: need 2048 or 4096", c.FrameSize)
	}
	return nil
}

// maxRing is the most entries a ring of a socket may have.
const maxRing = 1 << 16

func ringSizeOK(n int) bool { return n >= 8 && n&(n-1) == 0 && n <= maxRing }

// Socket is one AF_XDP socket bound to one queue of an interface, with its
// own UMEM of RXRingSize + RingSize frames: the first RXRingSize receive,
// the rest transmit.
type Socket struct {
	fd             int
	ifindex, queue int
	cfg            Config
	umem           []byte
	zeroCopy       bool
	copyReason     error // why zero-copy was not used (BindAuto)

	Fill       FillQueue
	Completion CompletionQueue
	RX         RXQueue
	TX         TXQueue

	rx rxState // receive side
	tx txState // send side
}

// Open creates an AF_XDP socket on queue of the interface ifindex. Nothing
// arrives on it until an XDP program redirects packets to its FD.
func Open(ifindex, queue int, cfg Config) (*Socket, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("%w: kernel without AF_XDP: %w", ErrNotSupported, err)
		}
		return nil, os.NewSyscallError("socket AF_XDP", err)
	}
	s := &Socket{fd: fd, ifindex: ifindex, queue: queue, cfg: cfg}
	if err := s.setup(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Socket) setup() error {
	var err error
	s.umem, err = unix.Mmap(-1, 0, s.cfg.UMEMBytes(), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return os.NewSyscallError("mmap UMEM", err)
	}
	if err := registerUMEM(s.fd, s.umem, s.cfg.FrameSize); err != nil {
		return err
	}
	rx, tx := s.cfg.RXRingSize, s.cfg.RingSize
	for _, o := range []struct{ opt, n int }{
		{unix.XDP_UMEM_FILL_RING, rx}, {unix.XDP_UMEM_COMPLETION_RING, tx}, {unix.XDP_RX_RING, rx}, {unix.XDP_TX_RING, tx},
	} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, o.opt, o.n); err != nil {
			return os.NewSyscallError("setsockopt XDP ring size", err)
		}
	}
	if err := s.mapRings(); err != nil {
		return err
	}
	s.initFrames()
	if err := s.busyPoll(); err != nil {
		return err
	}
	return s.bind()
}

func (s *Socket) mapRings() error {
	off, err := mmapOffsets(s.fd)
	if err != nil {
		return err
	}
	rx, tx := s.cfg.RXRingSize, s.cfg.RingSize
	if s.Fill.ring, s.Fill.entries, err = mapAddrRing(s.fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, rx); err != nil {
		return err
	}
	if s.Completion.ring, s.Completion.entries, err = mapAddrRing(s.fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, tx); err != nil {
		return err
	}
	if s.RX.ring, s.RX.entries, err = mapDescRing(s.fd, off.Rx, unix.XDP_PGOFF_RX_RING, rx); err != nil {
		return err
	}
	s.TX.ring, s.TX.entries, err = mapDescRing(s.fd, off.Tx, unix.XDP_PGOFF_TX_RING, tx)
	return err
}

// initFrames gives every receive frame to the fill ring and puts every
// transmit frame on the free list.
func (s *Socket) initFrames() {
	rx, tx, fs := uint32(s.cfg.RXRingSize), uint32(s.cfg.RingSize), uint64(s.cfg.FrameSize)
	got, idx := s.Fill.Reserve(rx)
	for i := range got {
		s.Fill.Set(idx+i, uint64(i)*fs)
	}
	s.Fill.Notify()
	s.tx.free = make([]uint64, 0, tx)
	for i := rx; i < rx+tx; i++ {
		s.tx.free = append(s.tx.free, uint64(i)*fs)
	}
	s.tx.reserved = make([]uint64, 0, tx)
}

func (s *Socket) busyPoll() error {
	if s.cfg.BusyPoll <= 0 {
		return nil
	}
	us := int(max(s.cfg.BusyPoll/time.Microsecond, 1))
	if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, us); err != nil {
		return fmt.Errorf("xdp: busy poll: %w", os.NewSyscallError("setsockopt SO_BUSY_POLL", err))
	}
	// Newer options: absent on old kernels, which still busy-poll.
	_ = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL, 1)
	_ = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL_BUDGET, s.cfg.BusyPollBudget)
	return nil
}

// bind binds the socket, trying zero-copy first in BindAuto and retrying a
// queue that a socket closed a moment ago still holds.
func (s *Socket) bind() error {
	flags := uint16(0)
	if !s.cfg.NoNeedWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
	}
	if s.cfg.Bind != BindCopy {
		err := s.bindRetry(flags | unix.XDP_ZEROCOPY)
		if err == nil {
			s.zeroCopy = true
			return nil
		}
		if s.cfg.Bind == BindZeroCopy || errors.Is(err, ErrBusy) {
			return err
		}
		s.copyReason = err
	}
	return s.bindRetry(flags | unix.XDP_COPY)
}

func (s *Socket) bindRetry(flags uint16) error {
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(s.ifindex), QueueID: uint32(s.queue)}
	deadline := time.Now().Add(s.cfg.BindRetry)
	for {
		err := unix.Bind(s.fd, sa)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			time.Sleep(10 * time.Millisecond)
			continue
		case errors.Is(err, unix.EBUSY):
			return fmt.Errorf("%w: queue %d of interface %d is held by another AF_XDP socket: %w", ErrBusy, s.queue, s.ifindex, err)
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPROTONOSUPPORT):
			return fmt.Errorf("%w: bind %s to queue %d of interface %d: %w", ErrNotSupported, bindName(flags), s.queue, s.ifindex, err)
		}
		return fmt.Errorf("xdp: bind %s to queue %d of interface %d: %w", bindName(flags), s.queue, s.ifindex, os.NewSyscallError("bind", err))
	}
}

func bindName(flags uint16) string {
	if flags&unix.XDP_ZEROCOPY != 0 {
		return "zero-copy"
	}
	return "copy mode"
}

// FD is the socket's file descriptor, for the XDP program's XSKMAP.
func (s *Socket) FD() int { return s.fd }

// Queue is the queue the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// ZeroCopy reports whether the socket runs in zero-copy mode, and if not
// (in BindAuto) why zero-copy was refused.
func (s *Socket) ZeroCopy() (bool, error) { return s.zeroCopy, s.copyReason }

// FrameSize is the size of one UMEM frame.
func (s *Socket) FrameSize() int { return s.cfg.FrameSize }

// Close unmaps everything and closes the socket.
func (s *Socket) Close() error {
	if s.fd < 0 {
		return ErrClosed
	}
	for _, r := range []*ring{&s.Fill.ring, &s.Completion.ring, &s.RX.ring, &s.TX.ring} {
		if r.mem != nil {
			unix.Munmap(r.mem)
			r.mem = nil
		}
	}
	err := unix.Close(s.fd)
	s.fd = -1
	if s.umem != nil {
		unix.Munmap(s.umem)
		s.umem = nil
	}
	return os.NewSyscallError("close", err)
}
