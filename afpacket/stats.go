package afpacket

import (
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// counter has one writer and any number of readers (Stats).
type counter struct{ v atomic.Uint64 }

func (c *counter) add(n uint64) { c.v.Store(c.v.Load() + n) }
func (c *counter) load() uint64 { return c.v.Load() }

// kernelStats sums PACKET_STATISTICS, which the kernel resets on each read.
type kernelStats struct{ packets, drops, freezes uint64 }

// Stats counts a socket's traffic.
type Stats struct {
	RXFrames, RXBytes uint64 // handed out by Receive
	RXBlocks          uint64 // blocks of a BlockRing given back by Release
	// From PACKET_STATISTICS: Packets passed the filter (including the
	// dropped ones), Drops found no room in the ring, Freezes counts the
	// times every block was held by user space.
	Packets, Drops, Freezes uint64

	TXFrames, TXBytes uint64 // submitted
	Kicks             uint64 // sendto calls
	TXFull            uint64 // ReserveTX calls that got fewer frames than asked
	TXRetries         uint64 // kicks the device refused for now (ENOBUFS, EAGAIN)
}

// Stats returns the socket's counters. It may be called from any
// goroutine while the socket is open.
func (s *Socket) Stats() (Stats, error) {
	st := Stats{
		RXFrames: s.rx.frames.load(), RXBytes: s.rx.bytes.load(), RXBlocks: s.rx.released.load(),
		TXFrames: s.tx.frames.load(), TXBytes: s.tx.bytes.load(), Kicks: s.tx.kicks.load(),
		TXFull: s.tx.full.load(), TXRetries: s.tx.retries.load(),
	}
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	if s.rxfd < 0 {
		return st, fmt.Errorf("afpacket: stats: %w", ErrClosed)
	}
	k, err := unix.GetsockoptTpacketStatsV3(s.rxfd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return st, fmt.Errorf("afpacket: stats: %w", os.NewSyscallError("getsockopt PACKET_STATISTICS", err))
	}
	s.kstats.packets += uint64(k.Packets)
	s.kstats.drops += uint64(k.Drops)
	s.kstats.freezes += uint64(k.Freeze_q_cnt)
	st.Packets, st.Drops, st.Freezes = s.kstats.packets, s.kstats.drops, s.kstats.freezes
	return st, nil
}
