package transport

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/xdp"
)

// XDPConfig configures an AF_XDP transport.
type XDPConfig struct {
	Iface string // the interface (required)
	// Bind is the local address and port. An invalid address means the
	// interface's first IPv4 address; port 0 picks a free port.
	Bind netip.AddrPort
	// Group, when valid, is a multicast group received on Bind's port.
	Group netip.Addr
	TTL   int      // TTL of multicast datagrams (default 1)
	Mode  bpf.Mode // how the steering program attaches (default auto)
	// Socket tunes the AF_XDP sockets (ring and frame sizes, bind mode,
	// need_wakeup, busy polling). Mode and Socket apply when the process
	// opens the interface; later transports on it share what is open.
	Socket xdp.Config
	// BusyPollAuto says Socket.BusyPoll was chosen for the caller's wait
	// mode, not asked for: the interface then busy-polls only where it
	// can bring a frame sooner (busyPolls), and not on a veth.
	BusyPollAuto bool
}

// XDP is a Pollable Peeker: a Loop skips its idle members' receives.
var (
	_ replica.Pollable = (*XDP)(nil)
	_ replica.Peeker   = (*XDP)(nil)
)

// XDP is a replica.Transport over AF_XDP sockets, one per queue of the
// interface, with the steering program redirecting its flow to them. The
// transports of a process on one interface share the program and the
// sockets; each receives the datagrams to its own port.
type XDP struct {
	cfg      XDPConfig
	f        *iface
	flow     bpf.Flow
	heldPort // the kernel socket reserving the port, joining the group
	// poller parks RecvBatch until the sockets have frames or another
	// transport of the interface woke it for its inbox. Each transport has
	// its own: waiters never queue behind one another.
	poller *xdp.Poller
	closed atomic.Bool

	recvMu sync.Mutex // one RecvBatch at a time
	rx     receiver   // under recvMu; woken: closed, datagrams in the inbox, or f.watchGen moved
	// genAt is f.watchGen as RecvBatch last loaded it, before it looked
	// at f.watchers (under recvMu).
	genAt uint32
	tx    sender // under f.txMu
	in    inbox  // under f.rxMu
	// arrival is what OnArrival gave: the transport that drains the
	// shared sockets calls it, under f.rxMu, after putting a datagram in
	// in. Written under f.rxMu (OnArrival); leave removes x from the
	// interface under that lock, so it is never called after Close.
	arrival func()
	// watching is arrival != nil: x's user watches the sockets itself.
	// Stored under f.rxMu (OnArrival, leave), loaded by RecvBatch.
	watching atomic.Bool
	st       xdpCounters
}

// NewXDP opens the AF_XDP transport. Any reason it cannot work here (no
// such interface, no permission, no XDP in the driver, no AF_XDP in the
// kernel, a queue held by another process) is returned wrapped in
// ErrXDPUnavailable; no permission names the capabilities missing
// (xdpCaps, caps.ErrMissing).
func NewXDP(cfg XDPConfig) (*XDP, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = 1
	}
	f, err := acquire(cfg)
	if err != nil {
		return nil, xdpUnavailable(cfg, err)
	}
	x := &XDP{cfg: cfg, f: f}
	if err := x.open(); err != nil {
		x.Close()
		return nil, xdpUnavailable(cfg, err)
	}
	x.tx = newSender(f.socks[0], f.socks[0].FrameSize(), &x.closed, &x.st.sendCounters,
		routes{mu: &f.txMu, refreshes: &f.refreshes, hops: &f.hops, link: f.link, local: x.local, ttl: cfg.TTL})
	x.rx = receiver{closed: &x.closed, src: x, poller: x.poller, shut: xdp.ErrClosed,
		woken: func() bool {
			return x.closed.Load() || x.in.pending.Load() > 0 || f.watchGen.Load() != x.genAt
		},
		handed: func() bool { return f.watchedFor(x) }}
	return x, nil
}

func (x *XDP) open() error {
	var err error
	if x.poller, err = xdp.NewPoller(x.f.socks...); err != nil {
		return err
	}
	if err := x.hold(x.f.link, x.cfg.Bind, x.cfg.Group, false); err != nil {
		return err
	}
	if err := x.f.join(x); err != nil {
		return err
	}
	x.flow = bpf.Flow{Addr: x.local.Addr(), Port: x.local.Port()}
	if x.cfg.Group.IsValid() {
		x.flow.Addr = x.cfg.Group
	}
	return x.f.prog.AddFlow(x.flow)
}

// Name names the transport in replica's statistics.
func (x *XDP) Name() string { return "xdp" }

// PollFDs are the interface's AF_XDP sockets, one per queue: a frame for
// any transport of the interface makes one readable (see
// replica.Pollable).
func (x *XDP) PollFDs() []int {
	fds := make([]int, len(x.f.socks))
	for i, s := range x.f.socks {
		fds[i] = s.FD()
	}
	return fds
}

// Pending reports whether RecvBatch(ms, 0) may have anything to do: a
// datagram in the inbox, frames on a shared socket, or a busy-poll
// syscall due (see replica.Peeker).
func (x *XDP) Pending(now time.Time) bool {
	if x.Arrived() {
		return true
	}
	for _, s := range x.f.socks {
		if s.Pending(now) {
			return true
		}
	}
	return false
}

// Arrived reports, without a system call, whether datagrams are queued
// for this transport or in the interface's RX rings (Pending without the
// busy poll; see replica.Peeker).
func (x *XDP) Arrived() bool {
	if x.in.pending.Load() > 0 {
		return true
	}
	for _, s := range x.f.socks {
		if s.Readable() {
			return true
		}
	}
	return false
}

// OnArrival sets what is called after another transport of the interface
// drained a datagram for this one into its inbox (see replica.Pollable).
//
// A transport with a notify set is a watcher: its user drains the
// interface's sockets whenever they have frames. While another transport
// is one, a RecvBatch that waits leaves the sockets out of Go's poller and
// waits for the watcher to hand its datagrams over: a server's PUNCH
// receiver beside a mirror on one interface (a hub) then costs nothing
// per datagram of the mirror's. A watcher that stops receiving holds the
// others' datagrams until it receives again or closes.
func (x *XDP) OnArrival(notify func()) {
	f := x.f
	f.rxMu.Lock()
	defer f.rxMu.Unlock()
	x.arrival = notify
	if was := x.watching.Swap(notify != nil); was != (notify != nil) && f.users[x.local.Port()] == x {
		f.watch(notify != nil)
	}
}

// Close stops steering the transport's flow, releases its share of the
// interface (the last transport detaches the program and closes the
// sockets) and wakes a blocked RecvBatch with replica.ErrClosed.
func (x *XDP) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	var errs []error
	f := x.f
	if x.flow.Port != 0 {
		if err := f.prog.RemoveFlow(x.flow); err != nil && !errors.Is(err, bpf.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	f.leave(x)
	if x.poller != nil {
		errs = append(errs, x.poller.Close()) // wakes RecvBatch
	}
	x.recvMu.Lock() // a RecvBatch in progress has returned
	x.recvMu.Unlock()
	errs = append(errs, f.release())
	errs = append(errs, x.heldPort.release())
	return errors.Join(errs...)
}

var (
	_ replica.Transport = (*XDP)(nil)
	_ replica.Pollable  = (*XDP)(nil)
	_ replica.Peeker    = (*XDP)(nil)
)
