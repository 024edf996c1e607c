package transport

import (
	"fmt"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/xdp"
)

// XDPStats describes an AF_XDP transport and counts its traffic.
type XDPStats struct {
	Iface    string
	Attach   string // how the program is attached: native or generic
	ZeroCopy bool   // the sockets run in zero-copy mode
	CopyWhy  string // why zero-copy was refused, when it was
	Sockets  int    // one per queue
	// BusyPoll is the sockets' SO_BUSY_POLL per system call (0: off).
	BusyPoll time.Duration

	Sent, Received uint64 // datagrams
	NoRoute        uint64 // datagrams to destinations the interface cannot reach
	TooBig         uint64 // datagrams larger than the MTU (EMSGSIZE)
	Malformed      uint64 // received frames that failed validation
	Foreign        uint64 // received frames for another port
	Truncated      uint64 // received datagrams larger than the caller's buffer
	TXWaits        uint64 // SendBatch calls that waited for TX room
	InboxDrops     uint64 // datagrams dropped when another transport of the interface held too many for this one

	Socket  xdp.Stats    // summed over the sockets
	Program bpf.Counters // the steering program's counters
}

// Stats returns the transport's counters; Malformed, Foreign, Socket and
// Program are the interface's, shared by the process's transports on it.
func (x *XDP) Stats() (XDPStats, error) {
	f := x.f
	st := XDPStats{
		Iface: f.link.Name, Attach: f.prog.Mode().String(), BusyPoll: f.busyPoll,
		Sent: x.st.sent.Load(), Received: x.st.received.Load(), NoRoute: x.st.noRoute.Load(),
		TooBig: x.st.tooBig.Load(), Malformed: f.st.malformed.Load(), Foreign: f.st.foreign.Load(),
		Truncated: x.st.truncated.Load(), TXWaits: x.st.waits.Load(), InboxDrops: x.in.drops.Load(),
	}
	f.txMu.Lock()
	defer f.txMu.Unlock()
	if x.closed.Load() {
		return st, fmt.Errorf("transport: stats: %w", xdp.ErrClosed)
	}
	st.Sockets = len(f.socks)
	for i, s := range f.socks {
		if i == 0 {
			zc, why := s.ZeroCopy()
			st.ZeroCopy = zc
			if why != nil {
				st.CopyWhy = why.Error()
			}
		}
		ss, err := s.Stats()
		if err != nil {
			return st, err
		}
		addSocket(&st.Socket, ss)
	}
	c, err := f.prog.Counters()
	st.Program = c
	return st, err
}

func addSocket(a *xdp.Stats, b xdp.Stats) {
	a.RXFrames += b.RXFrames
	a.RXBytes += b.RXBytes
	a.TXFrames += b.TXFrames
	a.TXBytes += b.TXBytes
	a.Kicks += b.Kicks
	a.FillWakeups += b.FillWakeups
	a.TXFull += b.TXFull
	a.BusyPolls += b.BusyPolls
	a.RXDropped += b.RXDropped
	a.RXInvalid += b.RXInvalid
	a.TXInvalid += b.TXInvalid
	a.RXRingFull += b.RXRingFull
	a.FillRingEmpty += b.FillRingEmpty
	a.TXRingEmptyOps += b.TXRingEmptyOps
}

// Program is the steering program (tests inject loss through its fault map).
func (x *XDP) Program() *bpf.Program { return x.f.prog }
