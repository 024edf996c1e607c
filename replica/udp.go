package replica

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netpoll"
)

// UDPConfig configures a kernel UDP transport.
type UDPConfig struct {
	// Bind is the local address (port 0: any free port).
	Bind netip.AddrPort
	// Group, when valid, is a multicast group joined for receiving, on
	// Iface (the interface with that address; unspecified: the kernel's
	// choice).
	Group netip.Addr
	// Iface selects the interface, by its IPv4 address, for sending and
	// joining multicast.
	Iface netip.Addr
	// TTL of multicast datagrams (default 1: the local network).
	TTL int
	// Loopback delivers our own multicast datagrams to local receivers.
	Loopback bool
	// Batch is the most datagrams one system call moves (default 64).
	Batch int
	// SocketBuffer sizes the socket's receive and send buffers when
	// positive: SO_RCVBUFFORCE and SO_SNDBUFFORCE where permitted
	// (CAP_NET_ADMIN), else SO_RCVBUF and SO_SNDBUF, which the kernel caps
	// at net.core.rmem_max and wmem_max. UDP.Buffers tells what was
	// granted.
	SocketBuffer int
}

// UDP is the kernel UDP transport: sendmmsg and recvmmsg on one
// non-blocking socket. The socket is made and configured through package
// net (x/net/ipv4 sets the multicast options); the transport keeps a
// duplicate that is in no poller: every datagram and every freed send
// buffer would otherwise wake the poller's thread, for nobody. Waits are
// ppoll(2) on the socket (a blocked RecvBatch or a full send buffer), or
// the caller's own (Pollable). The batch calls are our own
// (udp_unsafe.go) because ipv4.PacketConn.ReadBatch allocates a
// net.UDPAddr per datagram.
type UDP struct {
	fd int // the socket, ours alone (netpoll.Dup)
	// closed is set by Close (Store) before it shuts the socket down, which
	// wakes calls in ppoll; they and later calls then return ErrClosed.
	closed atomic.Bool
	// inUse is held shared by every call for its system calls, and
	// exclusively by Close while it closes the descriptor: a call never
	// meets a descriptor number that was closed and reused.
	inUse sync.RWMutex
	// Sending and receiving may run in two goroutines: one set of kernel
	// structures each.
	smm, rmm *mmsg
	addr     netip.AddrPort
	rcv, snd int // buffer sizes the kernel granted (getsockopt)
}

// NewUDP opens a kernel UDP transport.
func NewUDP(cfg UDPConfig) (*UDP, error) {
	if !cfg.Bind.Addr().IsValid() {
		cfg.Bind = netip.AddrPortFrom(netip.IPv4Unspecified(), cfg.Bind.Port())
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", cfg.Bind.String())
	if err != nil {
		return nil, fmt.Errorf("udp: listen %v: %w", cfg.Bind, err)
	}
	conn := pc.(*net.UDPConn)
	u := &UDP{smm: newMmsg(cfg.Batch), rmm: newMmsg(cfg.Batch)}
	u.addr = conn.LocalAddr().(*net.UDPAddr).AddrPort()
	err = u.configure(conn, cfg)
	if err == nil {
		u.fd, err = netpoll.Dup(conn) // in no poller
	}
	conn.Close() // takes conn's descriptor out of Go's poller; ours was never in it
	if err != nil {
		return nil, fmt.Errorf("udp: %v: %w", cfg.Bind, err)
	}
	return u, nil
}

func (u *UDP) configure(conn *net.UDPConn, cfg UDPConfig) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	raw.Control(func(fd uintptr) {
		if cfg.SocketBuffer > 0 {
			u.rcv = setBuffer(int(fd), unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.SocketBuffer)
			u.snd = setBuffer(int(fd), unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SocketBuffer)
		} else {
			u.rcv, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
			u.snd, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		}
	})
	p := ipv4.NewPacketConn(conn)
	var ifi *net.Interface
	if cfg.Iface.IsValid() && !cfg.Iface.IsUnspecified() {
		var err error
		if ifi, err = InterfaceByAddr(cfg.Iface); err != nil {
			return err
		}
		if err := p.SetMulticastInterface(ifi); err != nil {
			return fmt.Errorf("udp: multicast interface %s: %w", ifi.Name, err)
		}
	}
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = 1
	}
	if err := p.SetMulticastTTL(ttl); err != nil {
		return fmt.Errorf("udp: multicast ttl: %w", err)
	}
	if err := p.SetMulticastLoopback(cfg.Loopback); err != nil {
		return fmt.Errorf("udp: multicast loopback: %w", err)
	}
	if cfg.Group.IsValid() {
		if !cfg.Group.Is4() || !cfg.Group.IsMulticast() {
			return fmt.Errorf("udp: %v is not an IPv4 multicast group", cfg.Group)
		}
		if err := p.JoinGroup(ifi, &net.UDPAddr{IP: cfg.Group.AsSlice()}); err != nil {
			return fmt.Errorf("udp: join %v: %w", cfg.Group, err)
		}
	}
	return nil
}

// InterfaceByAddr finds the interface holding an IPv4 address.
func InterfaceByAddr(a netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for i := range ifs {
		addrs, _ := ifs[i].Addrs()
		for _, ad := range addrs {
			if pfx, err := netip.ParsePrefix(ad.String()); err == nil && pfx.Addr() == a {
				return &ifs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("udp: no interface has address %v", a)
}

// setBuffer asks for a socket buffer of size bytes, past the system's
// limit where permitted (force), and returns what the kernel granted (it
// doubles the request for its bookkeeping).
func setBuffer(fd, force, plain, size int) int {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
	}
	got, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
	return got
}

// Buffers returns the receive and send buffer sizes the kernel granted,
// in bytes (what getsockopt reports).
func (u *UDP) Buffers() (rcv, snd int) { return u.rcv, u.snd }

// LocalAddr is the bound address.
func (u *UDP) LocalAddr() netip.AddrPort { return u.addr }

// PollFDs is the socket (see Pollable).
func (u *UDP) PollFDs() []int { return []int{u.fd} }

// OnArrival does nothing: every datagram makes the socket readable.
func (u *UDP) OnArrival(func()) {}

// InterfaceAddr returns the first IPv4 address of the named interface.
func InterfaceAddr(name string) (netip.Addr, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, ad := range addrs {
		if pfx, err := netip.ParsePrefix(ad.String()); err == nil && pfx.Addr().Is4() {
			return pfx.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address", name)
}
