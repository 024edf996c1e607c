package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
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

// UDP is the kernel UDP transport: sendmmsg and recvmmsg on one socket
// registered with Go's poller. x/net/ipv4 sets the multicast options; the
// batch calls are our own (udp_unsafe.go) because ipv4.PacketConn.ReadBatch
// allocates a net.UDPAddr per datagram and cannot poll without parking.
type UDP struct {
	conn *net.UDPConn
	raw  syscall.RawConn
	// Sending and receiving may run in two goroutines: one set of kernel
	// structures each.
	smm, rmm *mmsg
	addr     netip.AddrPort
	fd       int // the socket, for PollFDs; owned by conn
	rcv, snd int // buffer sizes the kernel granted (getsockopt)
	// deadlineSet records that a read deadline is set and must be cleared
	// before a read without one.
	deadlineSet bool
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
	u := &UDP{conn: conn, smm: newMmsg(cfg.Batch), rmm: newMmsg(cfg.Batch)}
	if u.raw, err = conn.SyscallConn(); err != nil {
		conn.Close()
		return nil, err
	}
	u.addr = conn.LocalAddr().(*net.UDPAddr).AddrPort()
	u.raw.Control(func(fd uintptr) { u.fd = int(fd) })
	if err := u.configure(cfg); err != nil {
		conn.Close()
		return nil, err
	}
	return u, nil
}

func (u *UDP) configure(cfg UDPConfig) error {
	if cfg.SocketBuffer > 0 {
		u.rcv = setBuffer(u.fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.SocketBuffer)
		u.snd = setBuffer(u.fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SocketBuffer)
	} else {
		u.rcv, _ = unix.GetsockoptInt(u.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		u.snd, _ = unix.GetsockoptInt(u.fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	}
	p := ipv4.NewPacketConn(u.conn)
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

// SendBatch sends the messages with sendmmsg, in chunks of the batch size.
func (u *UDP) SendBatch(ms []Message) (int, error) {
	sent := 0
	for sent < len(ms) {
		n, err := u.sendChunk(ms[sent:])
		sent += n
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

func (u *UDP) sendChunk(ms []Message) (int, error) {
	ms = ms[:min(len(ms), u.smm.cap())]
	u.smm.n = u.smm.packSend(ms)
	err := u.raw.Write(u.smm.sendFn)
	sent, serr := u.smm.got, u.smm.err
	switch {
	case err != nil:
		return 0, mapNetErr(err)
	case serr != nil:
		return max(sent, 0), os.NewSyscallError("sendmmsg", serr)
	}
	return sent, nil
}

// RecvBatch receives with recvmmsg (see Transport).
func (u *UDP) RecvBatch(ms []Message, wait time.Duration) (int, error) {
	ms = ms[:min(len(ms), u.rmm.cap())]
	u.rmm.n, u.rmm.poll = u.rmm.packRecv(ms), wait == 0
	switch {
	case wait > 0:
		if err := u.conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
			return 0, mapNetErr(err)
		}
		u.deadlineSet = true
	case u.deadlineSet: // a past deadline would fail the read before it starts
		u.conn.SetReadDeadline(time.Time{})
		u.deadlineSet = false
	}
	err := u.raw.Read(u.rmm.recvFn)
	got, rerr := u.rmm.got, u.rmm.err
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil
	case err != nil:
		return 0, mapNetErr(err)
	case rerr == unix.EAGAIN:
		return 0, nil
	case rerr != nil:
		return 0, os.NewSyscallError("recvmmsg", rerr)
	}
	u.rmm.unpackRecv(ms[:got])
	return got, nil
}

// Close closes the socket.
func (u *UDP) Close() error { return u.conn.Close() }

func mapNetErr(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return ErrClosed
	}
	return err
}

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
