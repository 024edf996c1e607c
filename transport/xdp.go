package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/xdp"
)

// ErrXDPUnavailable wraps every reason the AF_XDP path cannot be used here;
// callers fall back to kernel UDP on it.
var ErrXDPUnavailable = errors.New("transport: AF_XDP cannot be used")

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
}

// XDP is a replica.Transport over AF_XDP sockets, one per queue of the
// interface, with the steering program redirecting its flow to them. The
// transports of a process on one interface share the program and the
// sockets; each receives the datagrams to its own port.
type XDP struct {
	cfg    XDPConfig
	f      *iface
	local  netip.AddrPort
	flow   bpf.Flow
	kernel *net.UDPConn // reserves the port, joins the group
	// poller parks RecvBatch until the sockets have frames or another
	// transport of the interface woke it for its inbox. Each transport has
	// its own: waiters never queue behind one another.
	poller *xdp.Poller
	closed atomic.Bool
	woken  func() bool // for the poller: closed, or datagrams in the inbox

	recvMu sync.Mutex // one RecvBatch at a time
	tx     txPath     // under f.txMu
	in     inbox      // under f.rxMu
	st     xdpCounters
}

// NewXDP opens the AF_XDP transport. Any reason it cannot work here (no
// such interface, no permission, no XDP in the driver, no AF_XDP in the
// kernel, a queue held by another process) is returned wrapped in
// ErrXDPUnavailable.
func NewXDP(cfg XDPConfig) (*XDP, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = 1
	}
	f, err := acquire(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %w", ErrXDPUnavailable, cfg.Iface, err)
	}
	x := &XDP{cfg: cfg, f: f}
	x.woken = func() bool { return x.closed.Load() || x.in.pending.Load() > 0 }
	if err := x.open(); err != nil {
		x.Close()
		return nil, fmt.Errorf("%w on %s: %w", ErrXDPUnavailable, cfg.Iface, err)
	}
	x.tx.init(x)
	return x, nil
}

func (x *XDP) open() error {
	var err error
	if x.poller, err = xdp.NewPoller(x.f.socks...); err != nil {
		return err
	}
	if err := x.openKernel(); err != nil {
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

// openKernel binds the kernel socket that reserves our port (and joins the
// group), and fixes the local address.
func (x *XDP) openKernel() (err error) {
	x.kernel, x.local, err = reservePort(x.f.link, x.cfg.Bind, x.cfg.Group, false)
	return err
}

// LocalAddr is the address and port datagrams are received on (for a
// multicast receiver: the interface's address and the group's port).
func (x *XDP) LocalAddr() netip.AddrPort { return x.local }

// Name names the transport in replica's statistics.
func (x *XDP) Name() string { return "xdp" }

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
	if x.kernel != nil {
		errs = append(errs, x.kernel.Close())
	}
	return errors.Join(errs...)
}

// XDPForServer is the configuration of a server's AF_XDP transport, from base
// (interface, attach mode, sockets) and the kernel UDP settings the server
// asks for (local address and port, TTL).
func XDPForServer(base XDPConfig, u replica.UDPConfig) XDPConfig {
	base.Bind, base.TTL = serverBind(u)
	return base
}

// XDPForMirror is the configuration of a mirror's AF_XDP transport, from base
// and what the source announced: a multicast group to receive, or unicast
// to a free port of the interface.
func XDPForMirror(base XDPConfig, s replica.DatagramSpec) XDPConfig {
	base.Bind, base.Group = mirrorBind(s)
	return base
}

// frameFits reports whether a datagram of n bytes fits the interface.
func (x *XDP) frameFits(n, header int) bool {
	f := x.f
	return n+pkt.IPv4Len+pkt.UDPLen <= f.link.MTU && n+header <= f.socks[0].FrameSize()
}

var _ replica.Transport = (*XDP)(nil)
