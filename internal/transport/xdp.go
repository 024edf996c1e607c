package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/xdp"
)

// ErrUnavailable wraps every reason the AF_XDP path cannot be used here;
// callers fall back to kernel UDP on it.
var ErrUnavailable = errors.New("transport: AF_XDP cannot be used")

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
	// need_wakeup, busy polling).
	Socket xdp.Config
}

// XDP is a replica.Transport over AF_XDP sockets, one per queue of the
// interface, with the steering program redirecting our flows to them.
type XDP struct {
	cfg  XDPConfig
	link neigh.Link
	// resolver finds next hops in the namespace the transport was opened
	// in, whichever thread sends.
	resolver *neigh.Resolver
	local    netip.AddrPort
	kernel   *net.UDPConn // reserves the port, joins the group
	prog     *bpf.Program
	socks    []*xdp.Socket
	poller   *xdp.Poller
	closed   atomic.Bool

	txMu sync.Mutex
	tx   txPath
	rxMu sync.Mutex
	rx   rxPath
	st   xdpCounters
}

// NewXDP opens the AF_XDP transport. Any reason it cannot work here (no
// such interface, no permission, no XDP in the driver, no AF_XDP in the
// kernel, a queue held by someone else) is returned wrapped in
// ErrUnavailable.
func NewXDP(cfg XDPConfig) (*XDP, error) {
	link, err := neigh.LinkByName(cfg.Iface)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 1
	}
	if cfg.Socket.FrameSize == 0 && link.MTU+pkt.MaxVLANHeaderLen-pkt.IPv4Len-pkt.UDPLen > 2048-256 {
		cfg.Socket.FrameSize = 4096
	}
	x := &XDP{cfg: cfg, link: link}
	if err := x.open(); err != nil {
		x.Close()
		return nil, fmt.Errorf("%w on %s: %w", ErrUnavailable, cfg.Iface, err)
	}
	x.tx.init(x)
	x.rx.init(len(x.socks))
	return x, nil
}

func (x *XDP) open() error {
	var err error
	if x.resolver, err = neigh.NewResolver(); err != nil {
		return err
	}
	if err := x.openKernel(); err != nil {
		return err
	}
	if x.prog, err = bpf.Load(); err != nil {
		return err
	}
	if err := x.prog.Attach(x.link.Index, x.cfg.Mode); err != nil {
		return err
	}
	queues, err := xdp.Queues(x.link.Name)
	if err != nil {
		return err
	}
	for q := range queues {
		s, err := xdp.Open(x.link.Index, q, x.cfg.Socket)
		if err != nil {
			return err
		}
		x.socks = append(x.socks, s)
		if err := x.prog.SetSocket(q, s.FD()); err != nil {
			return err
		}
	}
	if x.poller, err = xdp.NewPoller(x.socks...); err != nil {
		return err
	}
	flow := bpf.Flow{Addr: x.local.Addr(), Port: x.local.Port()}
	if x.cfg.Group.IsValid() {
		flow.Addr = x.cfg.Group
	}
	return x.prog.AddFlow(flow)
}

// openKernel binds the kernel socket that reserves our port (and joins the
// group), and fixes the local address.
func (x *XDP) openKernel() error {
	addr := x.cfg.Bind.Addr()
	if !addr.IsValid() || addr.IsUnspecified() {
		if len(x.link.Addrs) == 0 {
			return fmt.Errorf("interface %s has no IPv4 address", x.link.Name)
		}
		addr = x.link.Addrs[0].Addr()
	}
	bind := netip.AddrPortFrom(addr, x.cfg.Bind.Port())
	if x.cfg.Group.IsValid() {
		bind = netip.AddrPortFrom(netip.IPv4Unspecified(), x.cfg.Bind.Port())
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", bind.String())
	if err != nil {
		return fmt.Errorf("reserve UDP port: %w", err)
	}
	x.kernel = pc.(*net.UDPConn)
	x.local = netip.AddrPortFrom(addr, x.kernel.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	if !x.cfg.Group.IsValid() {
		return nil
	}
	ifi, err := net.InterfaceByIndex(x.link.Index)
	if err != nil {
		return err
	}
	g := &net.UDPAddr{IP: x.cfg.Group.AsSlice()}
	if err := ipv4.NewPacketConn(x.kernel).JoinGroup(ifi, g); err != nil {
		return fmt.Errorf("join %v on %s: %w", x.cfg.Group, x.link.Name, err)
	}
	return nil
}

// LocalAddr is the address and port datagrams are received on (for a
// multicast receiver: the interface's address and the group's port).
func (x *XDP) LocalAddr() netip.AddrPort { return x.local }

// Name names the transport in replica's statistics.
func (x *XDP) Name() string { return "xdp" }

// Close detaches the program and closes the sockets. Blocked RecvBatch
// calls return replica.ErrClosed.
func (x *XDP) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	var errs []error
	if x.poller != nil {
		errs = append(errs, x.poller.Close())
	}
	if x.prog != nil {
		errs = append(errs, x.prog.Close()) // stops redirecting first
	}
	x.txMu.Lock()
	x.rxMu.Lock()
	for _, s := range x.socks {
		errs = append(errs, s.Close())
	}
	x.socks = nil
	x.rxMu.Unlock()
	x.txMu.Unlock()
	if x.kernel != nil {
		errs = append(errs, x.kernel.Close())
	}
	if x.resolver != nil {
		errs = append(errs, x.resolver.Close())
	}
	return errors.Join(errs...)
}

var _ replica.Transport = (*XDP)(nil)

// ForServer is the configuration of a server's AF_XDP transport, from base
// (interface, attach mode, sockets) and the kernel UDP settings the server
// asks for (local address and port, TTL).
func ForServer(base XDPConfig, u replica.UDPConfig) XDPConfig {
	base.Bind, base.TTL = netip.AddrPortFrom(u.Iface, u.Bind.Port()), u.TTL
	return base
}

// ForMirror is the configuration of a mirror's AF_XDP transport, from base
// and what the source announced: a multicast group to receive, or unicast
// to a free port of the interface.
func ForMirror(base XDPConfig, s replica.DatagramSpec) XDPConfig {
	base.Bind = netip.AddrPortFrom(s.Iface, 0)
	if s.Group.IsValid() {
		base.Bind, base.Group = netip.AddrPortFrom(s.Iface, s.Group.Port()), s.Group.Addr()
	}
	return base
}
