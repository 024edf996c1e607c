package transport

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/replica"
)

// Kind names a datagram transport, or auto: the first of AF_XDP, AF_PACKET
// and kernel UDP that can be opened.
type Kind uint8

const (
	KindUDP      Kind = iota // kernel UDP (replica.NewUDP, replica.NewMirrorUDP)
	KindXDP                  // AF_XDP (NewXDP), else kernel UDP
	KindAFPacket             // AF_PACKET (NewAFPacket), else kernel UDP
	KindAuto                 // AF_XDP, else AF_PACKET, else kernel UDP
)

var (
	kindNames  = [...]string{"udp", "xdp", "afpacket", "auto"}
	kindLabels = [...]string{"kernel UDP", "AF_XDP", "AF_PACKET", "auto"}
)

// String is the kind's name: udp, xdp, afpacket or auto (for a transport,
// what replica.TransportName says).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Label is the kind as people write it: kernel UDP, AF_XDP, AF_PACKET, auto.
func (k Kind) Label() string {
	if int(k) < len(kindLabels) {
		return kindLabels[k]
	}
	return k.String()
}

// ParseKind returns the Kind named s (as String writes it).
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("%w %q: want auto, xdp, afpacket or udp", ErrKind, s)
}

// Config says which datagram transport a server or a mirror gets. Its
// zero value is kernel UDP.
type Config struct {
	Kind Kind
	// Iface is the interface of AF_XDP and AF_PACKET. Empty: the one
	// holding the local address the server or mirror asks for
	// (replica.UDPConfig.Iface, replica.DatagramSpec.Iface).
	Iface string
	// Require returns an error wrapping ErrNoBypass, instead of falling
	// back to kernel UDP, when Kind's kernel-bypass transports cannot be
	// opened.
	Require bool
	// XDP is the base of the AF_XDP transports: its Mode, Socket and
	// BusyPollAuto apply (Iface, Bind, Group and TTL are set per transport).
	XDP XDPConfig
	// AFPacket is the base of the AF_PACKET transports: its Socket applies.
	AFPacket AFPacketConfig
}

// Choice says which transport carries the datagrams and why the ones
// tried before it were refused.
type Choice struct {
	Asked Kind // Config.Kind
	// Kind carries the datagrams: KindXDP, KindAFPacket or KindUDP.
	Kind Kind
	// Transport is the transport opened (nil when none could be).
	Transport replica.Transport
	// Iface is the interface AF_XDP and AF_PACKET were tried on (empty
	// when Asked is KindUDP or no interface could be named).
	Iface string
	// XDPErr and AFPacketErr say why AF_XDP and AF_PACKET were refused;
	// they wrap ErrXDPUnavailable and ErrAFPacketUnavailable. nil: not
	// tried, or chosen.
	XDPErr, AFPacketErr error
}

// FellBack reports whether kernel UDP carries the datagrams though a
// kernel-bypass transport was asked for.
func (c Choice) FellBack() bool { return c.Kind == KindUDP && c.Asked != KindUDP }

// Err joins the reasons the kernel-bypass transports were refused.
func (c Choice) Err() error { return errors.Join(c.XDPErr, c.AFPacketErr) }

// OpenServer opens a server's datagram transport as c asks, from the
// kernel UDP settings the server gives its factory (replica.ServerConfig's
// NewTransport), and says which it chose.
func (c Config) OpenServer(u replica.UDPConfig) (replica.Transport, Choice, error) {
	return c.open(u.Iface, XDPForServer(c.XDP, u), AFPacketForServer(c.AFPacket, u),
		func() (replica.Transport, error) { return replica.NewUDP(u) })
}

// OpenMirror opens a mirror's datagram transport as c asks, from what the
// source announced (replica.MirrorConfig's NewTransport), and says which
// it chose.
func (c Config) OpenMirror(s replica.DatagramSpec) (replica.Transport, Choice, error) {
	return c.open(s.Iface, XDPForMirror(c.XDP, s), AFPacketForMirror(c.AFPacket, s),
		func() (replica.Transport, error) { return replica.NewMirrorUDP(s) })
}

// open opens the kernel-bypass transport c asks for, else the kernel UDP
// one.
func (c Config) open(local netip.Addr, xc XDPConfig, pc AFPacketConfig, kernel func() (replica.Transport, error)) (replica.Transport, Choice, error) {
	ch, err := c.bypass(local, xc, pc)
	if ch.Transport != nil || err != nil {
		return ch.Transport, ch, err
	}
	k, err := kernel()
	if err != nil {
		return nil, ch, err // k may be a typed nil
	}
	ch.Transport = k
	return k, ch, nil
}

// ServerFactory is a replica.ServerConfig.NewTransport opening with
// OpenServer; it hands every Choice to report (when not nil), failed ones
// too (Transport nil).
func (c Config) ServerFactory(report func(Choice)) func(replica.UDPConfig) (replica.Transport, error) {
	return factory(c.OpenServer, report)
}

// MirrorFactory is a replica.MirrorConfig.NewTransport opening with
// OpenMirror (once per connection to the source); it hands every Choice
// to report (when not nil), failed ones too (Transport nil).
func (c Config) MirrorFactory(report func(Choice)) func(replica.DatagramSpec) (replica.Transport, error) {
	return factory(c.OpenMirror, report)
}

func factory[S any](open func(S) (replica.Transport, Choice, error), report func(Choice)) func(S) (replica.Transport, error) {
	return func(s S) (replica.Transport, error) {
		t, ch, err := open(s)
		if report != nil {
			report(ch)
		}
		return t, err
	}
}

// bypass opens the kernel-bypass transport c asks for on the interface of
// local, or says why it could not (Choice.Transport nil, and an error with
// Require).
func (c Config) bypass(local netip.Addr, xc XDPConfig, pc AFPacketConfig) (Choice, error) {
	ch := Choice{Asked: c.Kind, Kind: KindUDP}
	if c.Kind > KindAuto {
		return ch, fmt.Errorf("transport: open: %w %d", ErrKind, c.Kind)
	}
	if c.Kind == KindUDP {
		return ch, nil
	}
	ifname, ierr := c.ifaceFor(local)
	ch.Iface = ifname
	if c.Kind == KindXDP || c.Kind == KindAuto {
		ch.XDPErr = ch.try(KindXDP, ierr, ErrXDPUnavailable, func() (replica.Transport, error) {
			xc.Iface = ifname
			return NewXDP(xc)
		})
	}
	if ch.Transport == nil && (c.Kind == KindAFPacket || c.Kind == KindAuto) {
		ch.AFPacketErr = ch.try(KindAFPacket, ierr, ErrAFPacketUnavailable, func() (replica.Transport, error) {
			pc.Iface = ifname
			return NewAFPacket(pc)
		})
	}
	if ch.Transport == nil && c.Require {
		return ch, fmt.Errorf("%w: %w", ErrNoBypass, ch.Err())
	}
	return ch, nil
}

// try opens a transport of kind k into ch, or returns why it cannot
// (ierr, when the interface could not be named, wrapped in unavailable).
func (ch *Choice) try(k Kind, ierr, unavailable error, open func() (replica.Transport, error)) error {
	if ierr != nil {
		return fmt.Errorf("%w: %w", unavailable, ierr)
	}
	t, err := open()
	if err != nil {
		return err
	}
	ch.Kind, ch.Transport = k, t
	return nil
}

// ifaceFor names the interface of the kernel-bypass transports whose local
// address is local.
func (c Config) ifaceFor(local netip.Addr) (string, error) {
	switch {
	case c.Iface != "":
		return c.Iface, nil
	case !local.IsValid() || local.IsUnspecified():
		return "", errors.New("no interface: name one (Config.Iface) or a local address")
	}
	l, err := neigh.LinkByAddr(local)
	if err != nil {
		return "", err
	}
	return l.Name, nil
}
