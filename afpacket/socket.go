package afpacket

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Errors of this package.
var (
	// ErrNotSupported: the kernel has no AF_PACKET or no TPACKET_V3 rings.
	ErrNotSupported = errors.New("afpacket: not supported")
	// ErrPermission: opening an AF_PACKET socket needs root or CAP_NET_RAW.
	ErrPermission = errors.New("afpacket: needs root or CAP_NET_RAW")
	// ErrClosed: the socket was closed.
	ErrClosed = errors.New("afpacket: closed")
)

// Config sizes the rings and says which frames the receive ring gets. The
// zero value is usable.
type Config struct {
	// BlockSize is the size of a receive block, a power of two from 4 KiB
	// (the page size) to 4 MiB (default 32 KiB); Blocks is how many (at
	// least 2, default 128). At low rates every block retires after
	// BlockTimeout with a few frames in it, so the ring absorbs a reader
	// that stalls for about Blocks × BlockTimeout (128 ms by default); at
	// high rates, Blocks × BlockSize bytes (4 MiB).
	BlockSize, Blocks int
	// BlockTimeout retires a block that has frames but is not full (1 ms
	// resolution; default 1 ms).
	BlockTimeout time.Duration
	// TXFrames is the number of transmit frames, a power of two from 8 to
	// 65536 (default 512); FrameSize their size including the 32-byte
	// frame header, a power of two from 2048 to 65536 (default 2048).
	TXFrames, FrameSize int
	// Filter is a classic BPF program choosing the frames the receive ring
	// gets (UDPFilter builds one); nil: every IPv4 frame of the interface.
	Filter []bpf.RawInstruction
}

const (
	txHeaderLen = 32      // TPACKET_ALIGN(sizeof(struct tpacket2_hdr)): frame data offset
	rxFrameSize = 2048    // tpacket_req3.tp_frame_size: validated, not used by V3
	maxBlock    = 4 << 20 // keeps each block one kernel allocation
	maxFilter   = 4096    // BPF_MAXINSNS
)

func (c *Config) defaults() error {
	if c.BlockSize == 0 {
		c.BlockSize = 32 << 10
	}
	if c.Blocks == 0 {
		c.Blocks = 128
	}
	if c.BlockTimeout <= 0 {
		c.BlockTimeout = time.Millisecond
	}
	if c.TXFrames == 0 {
		c.TXFrames = 512
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	pow2 := func(v, lo, hi int) bool { return v >= lo && v <= hi && v&(v-1) == 0 }
	switch {
	case !pow2(c.BlockSize, os.Getpagesize(), maxBlock):
		return fmt.Errorf("afpacket: block size %d: need a power of two in [%d, %d]", c.BlockSize, os.Getpagesize(), maxBlock)
	case c.Blocks < 2 || c.Blocks > 1<<16:
		return fmt.Errorf("afpacket: %d blocks: need 2 to 65536", c.Blocks)
	case !pow2(c.TXFrames, 8, 1<<16):
		return fmt.Errorf("afpacket: %d TX frames: need a power of two in [8, 65536]", c.TXFrames)
	case !pow2(c.FrameSize, 2048, 1<<16):
		return fmt.Errorf("afpacket: frame size %d: need a power of two in [2048, 65536]", c.FrameSize)
	case len(c.Filter) > maxFilter:
		return fmt.Errorf("afpacket: filter of %d instructions: at most %d", len(c.Filter), maxFilter)
	}
	return nil
}

// Socket is an AF_PACKET receive ring and transmit ring on one interface.
type Socket struct {
	rxfd, txfd int
	ifindex    int
	cfg        Config
	rxRing     []byte // Blocks × BlockSize
	txRing     []byte // TXFrames × FrameSize

	rx rxState // receive side
	tx txState // send side

	statsMu sync.Mutex
	kstats  kernelStats // PACKET_STATISTICS, summed (reading resets them)
}

// Open creates the rings on the interface ifindex. Only frames that pass
// cfg.Filter are copied to the receive ring.
func Open(ifindex int, cfg Config) (*Socket, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Socket{rxfd: -1, txfd: -1, ifindex: ifindex, cfg: cfg}
	if err := s.openRX(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.openTX(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// newSocket opens an AF_PACKET socket with no protocol (it receives
// nothing until bound with one) of TPACKET version v.
func newSocket(v int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		return -1, fmt.Errorf("%w: %w", ErrPermission, os.NewSyscallError("socket AF_PACKET", err))
	case errors.Is(err, unix.EAFNOSUPPORT):
		return -1, fmt.Errorf("%w: kernel without AF_PACKET: %w", ErrNotSupported, err)
	case err != nil:
		return -1, os.NewSyscallError("socket AF_PACKET", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, v); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: TPACKET version %d: %w", ErrNotSupported, v+1, os.NewSyscallError("setsockopt PACKET_VERSION", err))
	}
	return fd, nil
}

func (s *Socket) openRX() error {
	var err error
	if s.rxfd, err = newSocket(unix.TPACKET_V3); err != nil {
		return err
	}
	if s.cfg.Filter != nil {
		if err := SetFilter(s.rxfd, s.cfg.Filter); err != nil {
			return err
		}
	}
	c := &s.cfg
	req := unix.TpacketReq3{
		Block_size: uint32(c.BlockSize), Block_nr: uint32(c.Blocks),
		Frame_size: rxFrameSize, Frame_nr: uint32(c.BlockSize / rxFrameSize * c.Blocks),
		Retire_blk_tov: uint32(max(c.BlockTimeout/time.Millisecond, 1)),
	}
	if err := unix.SetsockoptTpacketReq3(s.rxfd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("afpacket: RX ring of %d × %d bytes: %w", c.Blocks, c.BlockSize, os.NewSyscallError("setsockopt PACKET_RX_RING", err))
	}
	if s.rxRing, err = mapRing(s.rxfd, c.Blocks*c.BlockSize); err != nil {
		return err
	}
	s.rx.init(s)
	return bind(s.rxfd, unix.ETH_P_IP, s.ifindex)
}

func (s *Socket) openTX() error {
	var err error
	if s.txfd, err = newSocket(unix.TPACKET_V2); err != nil {
		return err
	}
	for _, o := range []struct {
		opt  int
		name string
	}{{unix.PACKET_QDISC_BYPASS, "PACKET_QDISC_BYPASS"}, {unix.PACKET_LOSS, "PACKET_LOSS"}} {
		if err := unix.SetsockoptInt(s.txfd, unix.SOL_PACKET, o.opt, 1); err != nil {
			return os.NewSyscallError("setsockopt "+o.name, err)
		}
	}
	c := &s.cfg
	block := max(c.FrameSize, os.Getpagesize())
	req := unix.TpacketReq{
		Block_size: uint32(block), Block_nr: uint32(c.TXFrames * c.FrameSize / block),
		Frame_size: uint32(c.FrameSize), Frame_nr: uint32(c.TXFrames),
	}
	if err := unix.SetsockoptTpacketReq(s.txfd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return fmt.Errorf("afpacket: TX ring of %d × %d bytes: %w", c.TXFrames, c.FrameSize, os.NewSyscallError("setsockopt PACKET_TX_RING", err))
	}
	if s.txRing, err = mapRing(s.txfd, c.TXFrames*c.FrameSize); err != nil {
		return err
	}
	return bind(s.txfd, 0, s.ifindex)
}

func mapRing(fd, size int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	return mem, nil
}

// bind binds fd to the interface; protocol 0 receives nothing.
func bind(fd, protocol, ifindex int) error {
	sa := &unix.SockaddrLinklayer{Protocol: htons(uint16(protocol)), Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("afpacket: interface %d: %w", ifindex, os.NewSyscallError("bind", err))
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// FD is the receiving socket's descriptor (readable when a block is ready).
func (s *Socket) FD() int { return s.rxfd }

// FrameSize is the size of a transmit frame; TXFrame slices hold
// FrameSize-32 bytes.
func (s *Socket) FrameSize() int { return s.cfg.FrameSize }

// MaxFrame is the largest frame TXFrame can hold.
func (s *Socket) MaxFrame() int { return s.cfg.FrameSize - txHeaderLen }

// Close unmaps the rings and closes the sockets. Nothing may use the
// socket (or frames it handed out) during or after Close.
func (s *Socket) Close() error {
	if s.rxfd < 0 && s.txfd < 0 {
		return ErrClosed
	}
	var errs []error
	for _, m := range []*[]byte{&s.rxRing, &s.txRing} {
		if *m != nil {
			errs = append(errs, os.NewSyscallError("munmap", unix.Munmap(*m)))
			*m = nil
		}
	}
	for _, fd := range []*int{&s.rxfd, &s.txfd} {
		if *fd >= 0 {
			errs = append(errs, os.NewSyscallError("close", unix.Close(*fd)))
			*fd = -1
		}
	}
	return errors.Join(errs...)
}
