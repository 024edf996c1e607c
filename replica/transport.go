package replica

import (
	"errors"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// Message is one datagram of a batch.
type Message struct {
	// Buf holds the datagram to send, or the space to receive one into.
	Buf []byte
	// N is the length of the datagram received into Buf.
	N int
	// Addr is the destination of a datagram to send, or the source of one
	// received.
	Addr netip.AddrPort
}

// Transport moves batches of datagrams. The protocol code (sender, mirror)
// sees only this interface; kernel UDP (this package), AF_PACKET and AF_XDP
// implement it. A frame sent to many mirrors is one Message per
// destination, all sharing one Buf, in a single SendBatch call.
type Transport interface {
	// SendBatch sends ms[i].Buf to ms[i].Addr for every message and returns
	// how many were sent. A transport that cannot wait for buffer space (a
	// full ring) returns the count sent so far with ErrWouldBlock; kernel
	// UDP waits in ppoll(2) until its socket has room.
	SendBatch(ms []Message) (int, error)
	// RecvBatch receives up to len(ms) datagrams. wait 0 polls without
	// blocking; a positive wait blocks at most that long for the first
	// datagram; a negative wait blocks until one arrives or the transport
	// is closed. It returns 0, nil when nothing arrived in time.
	RecvBatch(ms []Message, wait time.Duration) (int, error)
	// LocalAddr is the address datagrams are received on.
	LocalAddr() netip.AddrPort
	// Close releases the transport; blocked calls return ErrClosed.
	Close() error
}

// Pollable is a Transport whose arrivals a loop can wait for outside Go's
// netpoller, parked in ppoll(2) on its own thread (MirrorConfig.Wait): a
// datagram for it makes one of PollFDs readable, or, when another
// goroutine hands it a datagram (AF_XDP sockets shared by several
// transports), that goroutine calls the function given to OnArrival after
// queueing it. A transport that is not Pollable is waited for in
// RecvBatch.
type Pollable interface {
	PollFDs() []int
	OnArrival(notify func())
}

// Peeker is a Transport that tells, without a system call, whether
// RecvBatch(ms, 0) may have anything to do. Kernel UDP is not one (only a
// system call can tell).
//
// Pending: datagrams have arrived, or a busy-poll syscall is due at now. A
// Loop skips the step of a mirror whose transport says no, that has no TCP
// frame queued and nothing due: an idle member then costs the loop a few
// loads, not a receive (the loop reads the clock once per turn for all).
//
// Arrived: datagrams have arrived, a due busy poll not counted. A server
// on a Loop asks it for its PUNCHes, which need no busy polling: a
// busy-poll syscall on a socket that carries one PUNCH a second per
// mirror is pure cost, paid in every turn.
type Peeker interface {
	Pending(now time.Time) bool
	Arrived() bool
}

// Withholder is a Transport that can tell, after a RecvBatch that
// returned everything it could, that more datagrams have reached this host
// which it cannot return yet: AF_PACKET's block receive ring (not the
// default frame ring, which withholds nothing) hands frames over a block
// at a time, when the block is full or its retire timer fires. A
// mirror then does not NAK a hole that only a heartbeat shows, whose
// datagrams may be among them, until they are returned or NakRepeat has
// passed.
type Withholder interface {
	Withheld() bool
}

// TransportName names a transport in the statistics: "udp" for kernel UDP,
// or what the transport's Name method returns ("xdp", "afpacket").
func TransportName(t Transport) string {
	if n, ok := t.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "udp"
}

// Errors of transports and connections.
var (
	ErrClosed     = errors.New("replica: closed")
	ErrWouldBlock = errors.New("replica: transport would block")
	// ErrPeerClosed: the other side closed the connection between frames.
	ErrPeerClosed = errors.New("replica: peer closed the connection")
	// ErrTruncated: the other side vanished in the middle of a frame.
	ErrTruncated = errors.New("replica: truncated frame")
	// ErrRingReplaced: the served ring file was replaced by a new ring (its
	// producer restarted); serve it again to pick the new one up.
	ErrRingReplaced = errors.New("replica: the ring file was replaced")
)

// Datagram budgets, header included, for ServerConfig.MTU (the wire's).
const (
	DefaultMTU = wire.DefaultMTU // 1500 − 20 IPv4 − 8 UDP
	MinMTU     = wire.MinMTU
	MaxMTU     = wire.MaxMTU // jumbo frames: 9000 − 28
)

// DatagramSpec tells a transport factory what the source announced.
type DatagramSpec struct {
	Group  netip.AddrPort // multicast group and port; invalid for unicast
	Source netip.AddrPort // the source's UDP address (unicast: punch to it)
	Iface  netip.Addr     // local interface address (optional)
	MTU    int
}
