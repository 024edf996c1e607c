package afpacket

import (
	"errors"
	"fmt"
	"net"
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

// RXRing is the kind of receive ring.
type RXRing int

const (
	// FrameRing (TPACKET_V2, the default) is a ring of fixed-size frames
	// the kernel hands over one by one, as soon as each is written, and
	// signals readable for each: a frame waits for nothing but its reader.
	FrameRing RXRing = iota
	// BlockRing (TPACKET_V3) is a ring of blocks the kernel packs frames
	// into and hands over whole: when full, or when BlockTimeout retires
	// a block that is not (so at low rates every frame waits for the
	// timer, a millisecond by default).
	BlockRing
)

// Config sizes the rings and says which frames the receive ring gets. The
// zero value is usable.
type Config struct {
	// RX is the kind of receive ring: FrameRing (the default) or
	// BlockRing.
	RX RXRing
	// BlockSize is the size of a receive block, a power of two from 4 KiB
	// (the page size) to 4 MiB (default 32 KiB); Blocks is how many (at
	// least 2, default 128): the receive ring is Blocks × BlockSize bytes
	// (4 MiB by default). A frame ring cuts it into frames of RXFrameSize
	// (2048 frames by default); a block ring packs frames into each block
	// back to back, so at high rates it holds more small frames, and at
	// low rates every block retires after BlockTimeout with a few frames
	// in it, so it absorbs a reader that stalls for about Blocks ×
	// BlockTimeout (128 ms by default).
	BlockSize, Blocks int
	// BlockTimeout retires a block of a BlockRing that has frames but is
	// not full (1 ms resolution; default 1 ms). A FrameRing ignores it.
	BlockTimeout time.Duration
	// RXFrameSize is the size of a FrameRing's frames including the
	// kernel's 66-byte header, a power of two from 2048 to 65536 (default:
	// the smallest that holds a frame of the interface's MTU, 2048 up to
	// an MTU of 1964). A longer frame is truncated to fit. When it
	// exceeds BlockSize, blocks grow to one frame and fewer of them keep
	// the ring's size. A BlockRing ignores it.
	RXFrameSize int
	// TXFrames is the number of transmit frames, a power of two from 8 to
	// 65536 (default 512); FrameSize their size including the 32-byte
	// frame header, a power of two from 2048 to 65536 (default 2048).
	TXFrames, FrameSize int
	// Filter is a classic BPF program choosing the frames the receive ring
	// gets (UDPFilter builds one); nil: every IPv4 frame of the interface.
	Filter []bpf.RawInstruction
}

const (
	txHeaderLen  = 32      // TPACKET_ALIGN(sizeof(struct tpacket2_hdr)): frame data offset
	rxFrameSize  = 2048    // tpacket_req3.tp_frame_size: validated, not used by V3
	rxFrameExtra = 80 + 4  // a V2 frame's IP header offset (header, sockaddr_ll, Ethernet) and a VLAN tag
	maxBlock     = 4 << 20 // keeps each block one kernel allocation
	maxFilter    = 4096    // BPF_MAXINSNS
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
	if c.RXFrameSize == 0 {
		c.RXFrameSize = 2048
	}
	pow2 := func(v, lo, hi int) bool { return v >= lo && v <= hi && v&(v-1) == 0 }
	switch {
	case c.RX != FrameRing && c.RX != BlockRing:
		return fmt.Errorf("afpacket: RX ring kind %d: want FrameRing or BlockRing", c.RX)
	case !pow2(c.RXFrameSize, 2048, 1<<16):
		return fmt.Errorf("afpacket: RX frame size %d: need a power of two in [2048, 65536]", c.RXFrameSize)
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
	rxRing     []byte // Blocks × BlockSize (a frame ring: at least)
	txRing     []byte // TXFrames × FrameSize

	rx rxState // receive side
	tx txState // send side

	statsMu sync.Mutex
	kstats  kernelStats // PACKET_STATISTICS, summed (reading resets them)
}

// Open creates the rings on the interface ifindex. Only frames that pass
// cfg.Filter are copied to the receive ring.
func Open(ifindex int, cfg Config) (*Socket, error) {
	if cfg.RX == FrameRing && cfg.RXFrameSize == 0 {
		cfg.RXFrameSize = frameSizeFor(ifindex)
	}
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
	version := unix.TPACKET_V2
	if s.cfg.RX == BlockRing {
		version = unix.TPACKET_V3
	}
	var err error
	if s.rxfd, err = newSocket(version); err != nil {
		return err
	}
	if s.cfg.Filter != nil {
		if err := SetFilter(s.rxfd, s.cfg.Filter); err != nil {
			return err
		}
	}
	c := &s.cfg
	var size int
	if c.RX == BlockRing {
		size, err = s.blockRX()
	} else {
		size, err = s.frameRX()
	}
	if err != nil {
		return fmt.Errorf("afpacket: RX ring of %d × %d bytes: %w", c.Blocks, c.BlockSize, os.NewSyscallError("setsockopt PACKET_RX_RING", err))
	}
	if s.rxRing, err = mapRing(s.rxfd, size); err != nil {
		return err
	}
	return bind(s.rxfd, unix.ETH_P_IP, s.ifindex)
}

// blockRX sets up a TPACKET_V3 ring of Blocks × BlockSize bytes.
func (s *Socket) blockRX() (int, error) {
	c := &s.cfg
	req := unix.TpacketReq3{
		Block_size: uint32(c.BlockSize), Block_nr: uint32(c.Blocks),
		Frame_size: rxFrameSize, Frame_nr: uint32(c.BlockSize / rxFrameSize * c.Blocks),
		Retire_blk_tov: uint32(max(c.BlockTimeout/time.Millisecond, 1)),
	}
	s.rx.blocks = true
	s.rx.b = blockRing{nblocks: c.Blocks, size: c.BlockSize}
	return c.Blocks * c.BlockSize, unix.SetsockoptTpacketReq3(s.rxfd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req)
}

// frameRX sets up a TPACKET_V2 ring of Blocks × BlockSize bytes cut into
// frames of RXFrameSize (blocks of one frame when a frame is larger).
func (s *Socket) frameRX() (int, error) {
	c := &s.cfg
	block := max(c.BlockSize, c.RXFrameSize)
	nblocks := max(c.Blocks*c.BlockSize/block, 2)
	n := nblocks * (block / c.RXFrameSize)
	req := unix.TpacketReq{
		Block_size: uint32(block), Block_nr: uint32(nblocks),
		Frame_size: uint32(c.RXFrameSize), Frame_nr: uint32(n),
	}
	s.rx.f = frameRing{n: n, size: c.RXFrameSize}
	return nblocks * block, unix.SetsockoptTpacketReq(s.rxfd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req)
}

// frameSizeFor is the smallest receive frame, a power of two from 2048,
// that holds a frame of the MTU of the interface ifindex (2048 when the
// interface is not found: bind then fails).
func frameSizeFor(ifindex int) int {
	size := 2048
	if ifi, err := net.InterfaceByIndex(ifindex); err == nil {
		for size < ifi.MTU+rxFrameExtra && size < 1<<16 {
			size *= 2
		}
	}
	return size
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

// FD is the receiving socket's descriptor (readable when the receive ring
// hands a frame or block over).
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
