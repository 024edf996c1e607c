package transport

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/ringfire/ringfire/afpacket"
	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
)

// AFPacketConfig configures an AF_PACKET transport. Iface (required),
// Bind, Group and TTL are those of XDPConfig: where it sends from and
// receives on.
type AFPacketConfig struct {
	Iface  string
	Bind   netip.AddrPort
	Group  netip.Addr
	TTL    int
	Socket afpacket.Config // sizes the rings; its Filter is set by the transport
}

// AFPacket is a replica.Transport over an AF_PACKET socket of its own: a
// receive ring whose socket filter passes only the transport's flow (its
// port, and its address or group), by default a TPACKET_V2 frame ring
// that hands each datagram over as it arrives (Socket.RX chooses a
// TPACKET_V3 block ring instead), and a TPACKET_V2 transmit ring that
// bypasses the qdisc. Several transports of a process on one
// interface each have their own socket; they share nothing.
//
// AF_PACKET taps the stack without steering: every datagram the ring
// receives also reaches the kernel UDP socket that holds the port, which
// therefore carries a socket filter dropping everything.
type AFPacket struct {
	cfg      AFPacketConfig
	link     neigh.Link
	resolver *neigh.Resolver // next hops in the interface's namespace
	hops     neigh.Cache
	sock     *afpacket.Socket
	poller   *afpacket.Poller
	heldPort // the kernel socket reserving the port, joining the group, receiving nothing
	closed   atomic.Bool

	txMu      sync.Mutex // the send side
	tx        sender     // under txMu
	refreshes sync.WaitGroup

	recvMu sync.Mutex // one RecvBatch at a time
	rx     receiver   // under recvMu; woken: closed
	frames [][]byte
	pkt    pkt.Packet
	st     packetCounters
}

// packetCounters are an AF_PACKET transport's counters: added to by its
// sender (under txMu) and its drain (under recvMu), loaded by Stats; they
// publish nothing but themselves.
type packetCounters struct {
	sendCounters
	received         atomic.Uint64
	malformed, stray atomic.Uint64 // received frames dropped
	truncated        atomic.Uint64 // received datagrams larger than the buffer
}

// NewAFPacket opens the AF_PACKET transport. Any reason it cannot work
// here (no such interface, no permission, no AF_PACKET rings in the
// kernel) is returned wrapped in ErrAFPacketUnavailable; no permission
// names CAP_NET_RAW when it is missing (caps.ErrMissing).
func NewAFPacket(cfg AFPacketConfig) (*AFPacket, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = 1
	}
	a := &AFPacket{cfg: cfg, frames: make([][]byte, 64)}
	if err := a.open(); err != nil {
		a.Close()
		return nil, afpacketUnavailable(cfg.Iface, err)
	}
	return a, nil
}

func (a *AFPacket) open() error {
	var err error
	if a.link, err = neigh.LinkByName(a.cfg.Iface); err != nil {
		return err
	}
	if a.resolver, err = neigh.NewResolver(); err != nil {
		return err
	}
	a.hops.Resolver = a.resolver
	if err = a.hold(a.link, a.cfg.Bind, a.cfg.Group, true); err != nil {
		return err
	}
	dst := a.local.Addr()
	if a.cfg.Group.IsValid() {
		dst = a.cfg.Group
	}
	sc := a.cfg.Socket
	if sc.Filter, err = afpacket.UDPFilter(dst, a.local.Port()); err != nil {
		return err
	}
	if a.sock, err = afpacket.Open(a.link.Index, sc); err != nil {
		return err
	}
	if a.poller, err = afpacket.NewPoller(a.sock); err != nil {
		return err
	}
	a.tx = newSender(a.sock, a.sock.MaxFrame(), &a.closed, &a.st.sendCounters,
		routes{mu: &a.txMu, refreshes: &a.refreshes, hops: &a.hops, link: a.link, local: a.local, ttl: a.cfg.TTL})
	a.rx = receiver{closed: &a.closed, src: a, poller: a.poller, woken: a.closed.Load, shut: afpacket.ErrClosed}
	return nil
}

// Name names the transport in replica's statistics.
func (a *AFPacket) Name() string { return "afpacket" }

// Close releases the sockets and wakes a blocked RecvBatch with
// replica.ErrClosed.
func (a *AFPacket) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	var errs []error
	if a.poller != nil {
		errs = append(errs, a.poller.Close()) // wakes RecvBatch
	}
	a.recvMu.Lock() // a RecvBatch in progress has returned
	a.txMu.Lock()   // and a SendBatch
	if a.sock != nil {
		errs = append(errs, a.sock.Close())
	}
	a.txMu.Unlock()
	a.recvMu.Unlock()
	a.refreshes.Wait() // they use the resolver (for at most resolveWait)
	if a.resolver != nil {
		errs = append(errs, a.resolver.Close())
	}
	errs = append(errs, a.heldPort.release())
	return errors.Join(errs...)
}

// AFPacketStats describes an AF_PACKET transport and counts its traffic.
type AFPacketStats struct {
	Iface          string
	Sent, Received uint64 // datagrams
	NoRoute        uint64 // datagrams to destinations the interface cannot reach
	TooBig         uint64 // datagrams larger than the MTU (EMSGSIZE)
	Malformed      uint64 // received frames that failed validation
	Stray          uint64 // received frames for another port (the filter lets none through)
	Truncated      uint64 // received datagrams larger than the caller's buffer
	TXWaits        uint64 // SendBatch calls that waited for TX room
	Socket         afpacket.Stats
}

// Stats returns the transport's counters.
func (a *AFPacket) Stats() (AFPacketStats, error) {
	st := AFPacketStats{
		Iface: a.link.Name, Sent: a.st.sent.Load(), Received: a.st.received.Load(),
		NoRoute: a.st.noRoute.Load(), TooBig: a.st.tooBig.Load(), Malformed: a.st.malformed.Load(),
		Stray: a.st.stray.Load(), Truncated: a.st.truncated.Load(), TXWaits: a.st.waits.Load(),
	}
	a.txMu.Lock()
	defer a.txMu.Unlock()
	if a.closed.Load() {
		return st, fmt.Errorf("transport: stats: %w", afpacket.ErrClosed)
	}
	var err error
	st.Socket, err = a.sock.Stats()
	return st, err
}

// PollFDs is the receive ring's socket: a frame (a block, for a block
// ring) handed over makes it readable (see replica.Pollable).
func (a *AFPacket) PollFDs() []int { return []int{a.sock.FD()} }

// OnArrival does nothing: nothing but the kernel fills the ring.
func (a *AFPacket) OnArrival(func()) {}

// Withheld reports whether datagrams have arrived that RecvBatch cannot
// return yet: frames in the receive block the kernel is still filling, for
// a block ring; a frame ring withholds nothing (see replica.Withholder).
func (a *AFPacket) Withheld() bool {
	a.recvMu.Lock()
	defer a.recvMu.Unlock()
	return !a.closed.Load() && a.sock.Filling()
}

var (
	_ replica.Transport  = (*AFPacket)(nil)
	_ replica.Pollable   = (*AFPacket)(nil)
	_ replica.Withholder = (*AFPacket)(nil)
)
