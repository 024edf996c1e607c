package transport

import (
	"fmt"

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

	Sent, Received uint64 // datagrams
	NoRoute        uint64 // datagrams to destinations the interface cannot reach
	TooBig         uint64 // datagrams larger than the MTU (EMSGSIZE)
	Malformed      uint64 // received frames that failed validation
	Foreign        uint64 // received frames for another port
	Truncated      uint64 // received datagrams larger than the caller's buffer
	TXWaits        uint64 // SendBatch calls that waited for TX room

	Socket  xdp.Stats    // summed over the sockets
	Program bpf.Counters // the steering program's counters
}

// Stats returns the transport's counters.
func (x *XDP) Stats() (XDPStats, error) {
	st := XDPStats{
		Iface: x.link.Name, Attach: x.prog.Mode().String(), Sockets: len(x.socks),
		Sent: x.st.sent.Load(), Received: x.st.received.Load(), NoRoute: x.st.noRoute.Load(),
		TooBig: x.st.tooBig.Load(), Malformed: x.st.malformed.Load(), Foreign: x.st.foreign.Load(),
		Truncated: x.st.truncated.Load(), TXWaits: x.st.waits.Load(),
	}
	x.txMu.Lock()
	defer x.txMu.Unlock()
	if x.closed.Load() {
		return st, fmt.Errorf("transport: stats: %w", xdp.ErrClosed)
	}
	for i, s := range x.socks {
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
	c, err := x.prog.Counters()
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
	a.RXDropped += b.RXDropped
	a.RXInvalid += b.RXInvalid
	a.TXInvalid += b.TXInvalid
	a.RXRingFull += b.RXRingFull
	a.FillRingEmpty += b.FillRingEmpty
	a.TXRingEmptyOps += b.TXRingEmptyOps
}

// Program is the steering program (tests inject loss through its fault map).
func (x *XDP) Program() *bpf.Program { return x.prog }
