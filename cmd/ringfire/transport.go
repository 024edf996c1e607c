package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// xdpFlags are the datagram transport options of serve and mirror (named
// for the first of them, --xdp):
//
//	--transport auto|xdp|afpacket|udp   (default: xdp with --xdp, else udp)
//	--transport-iface IFACE             the interface of xdp, afpacket, auto
//	--xdp IFACE                         shorthand: --transport xdp on IFACE
//	--require-transport                 fail instead of falling back to kernel UDP
//	--require-xdp                       AF_XDP or fail (--transport xdp only)
//
// The interface of a kernel-bypass transport is --transport-iface, else
// --xdp's, else the one holding the local address (--iface). auto tries
// AF_XDP, then AF_PACKET, then kernel UDP, and logs its choice and why in
// one line. An explicit xdp or afpacket falls back to kernel UDP with one
// warning. Flags named xdp apply to AF_XDP only; package transport makes
// the choice.
type xdpFlags struct {
	kind       string // --transport
	tiface     string // --transport-iface
	iface      string // --xdp IFACE
	require    bool   // --require-transport: fail instead of falling back
	requireXDP bool   // --require-xdp: AF_XDP or fail
	mode       string // --xdp-mode auto|native|generic
	busyUS     int    // --xdp-busy-poll-us: SO_BUSY_POLL on the AF_XDP sockets
}

func (x *xdpFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&x.kind, "transport", "", "datagram `transport`: auto (AF_XDP, else AF_PACKET, else kernel UDP), xdp, afpacket or udp (default: xdp with --xdp, else udp)")
	fs.StringVar(&x.tiface, "transport-iface", "", "interface `IFACE` of --transport xdp, afpacket or auto (default: --xdp's, else the one holding --iface's address)")
	fs.StringVar(&x.iface, "xdp", "", "carry datagrams over AF_XDP on interface `IFACE` (falls back to kernel UDP); with --transport xdp or auto, only names the interface")
	fs.BoolVar(&x.require, "require-transport", false, "fail instead of falling back to kernel UDP when --transport xdp, afpacket or auto finds no kernel-bypass transport")
	fs.BoolVar(&x.requireXDP, "require-xdp", false, "fail instead of falling back to kernel UDP when AF_XDP cannot be used (--transport xdp or --xdp)")
	fs.StringVar(&x.mode, "xdp-mode", "auto", "attach the XDP program in `mode` native, generic or auto")
	fs.IntVar(&x.busyUS, "xdp-busy-poll-us", -1, "busy-poll the AF_XDP sockets for `µs` per call (0: off; -1: 20 with --wait yield or spin on a NIC, else off, and off on a veth)")
}

// check validates the flags and returns the transport configuration they
// ask for.
func (x *xdpFlags) check() (transport.Config, error) {
	var cfg transport.Config
	if x.kind == "" {
		x.kind = "udp"
		if x.iface != "" {
			x.kind = "xdp"
		}
	}
	k, err := transport.ParseKind(x.kind)
	if err != nil {
		return cfg, usagef("--transport %q: want auto, xdp, afpacket or udp", x.kind)
	}
	if err := x.checkKind(k); err != nil {
		return cfg, err
	}
	if x.busyUS < -1 || x.busyUS > 1_000_000 {
		return cfg, usagef("--xdp-busy-poll-us %d: want 0..1000000, or -1", x.busyUS)
	}
	mode, err := xdpMode(x.mode)
	if err != nil {
		return cfg, err
	}
	cfg = transport.Config{Kind: k, Iface: x.tiface, Require: x.require || x.requireXDP}
	if cfg.Iface == "" {
		cfg.Iface = x.iface
	}
	cfg.XDP.Mode = mode
	cfg.XDP.Socket.BusyPoll = time.Duration(max(x.busyUS, 0)) * time.Microsecond
	return cfg, nil
}

// autoBusyPoll is --xdp-busy-poll-us -1's choice for a hot loop waiting
// in mode m: loops that poll without sleeping (yield, spin) busy-poll the
// AF_XDP queues as they poll the rings, on an interface where that can
// bring a frame sooner (not a veth: transport.XDPConfig.BusyPollAuto).
const autoBusyPoll = 20 * time.Microsecond

func (x *xdpFlags) busyPollFor(cfg *transport.Config, m replica.WaitMode) {
	if x.busyUS == -1 && (m == replica.WaitYield || m == replica.WaitSpin) {
		cfg.XDP.Socket.BusyPoll = autoBusyPoll
		cfg.XDP.BusyPollAuto = true
	}
}

// checkKind checks the flags that apply only to some kinds.
func (x *xdpFlags) checkKind(k transport.Kind) error {
	switch {
	case x.requireXDP && k != transport.KindXDP:
		return usagef("--require-xdp needs --xdp IFACE or --transport xdp (for afpacket or auto: --require-transport)")
	case x.require && k == transport.KindUDP:
		return usagef("--require-transport needs --transport xdp, afpacket or auto (or --xdp IFACE)")
	case x.iface != "" && k != transport.KindXDP && k != transport.KindAuto:
		return usagef("--xdp names an AF_XDP interface: with --transport %s use --transport-iface", x.kind)
	}
	return nil
}

func xdpMode(s string) (bpf.Mode, error) {
	switch s {
	case "auto":
		return bpf.ModeAuto, nil
	case "native":
		return bpf.ModeNative, nil
	case "generic":
		return bpf.ModeGeneric, nil
	}
	return 0, usagef("--xdp-mode %q: want auto, native or generic", s)
}

// bypass reports whether datagrams may go over AF_XDP or AF_PACKET (after
// check).
func (x *xdpFlags) bypass() bool { return x.kind != "udp" }

// requireFlag names the flag that forbids falling back to kernel UDP.
func (x *xdpFlags) requireFlag() string {
	if x.requireXDP {
		return "--require-xdp"
	}
	return "--require-transport"
}

// xdpOpener opens the datagram transports of serve and mirror through
// package transport and logs what it chose.
type xdpOpener struct {
	cfg     transport.Config
	require string // the flag behind cfg.Require, for its errors
	log     *slog.Logger
	once    sync.Once // the fallback warning of an explicit kind

	mu     sync.Mutex
	choice transport.Kind // what auto chose and logged last
	logged bool
}

func newOpener(cfg transport.Config, f *xdpFlags, log *slog.Logger) *xdpOpener {
	return &xdpOpener{cfg: cfg, require: f.requireFlag(), log: log}
}

// serverTransport is the server's transport factory.
func (o *xdpOpener) serverTransport() func(replica.UDPConfig) (replica.Transport, error) {
	return flagged(o, o.cfg.ServerFactory(o.report))
}

// mirrorTransport is the mirror's transport factory.
func (o *xdpOpener) mirrorTransport() func(replica.DatagramSpec) (replica.Transport, error) {
	return flagged(o, o.cfg.MirrorFactory(o.report))
}

// flagged names the require flag in the error of a required transport
// that could not be opened.
func flagged[S any](o *xdpOpener, open func(S) (replica.Transport, error)) func(S) (replica.Transport, error) {
	return func(s S) (replica.Transport, error) {
		t, err := open(s)
		if errors.Is(err, transport.ErrNoBypass) {
			err = fmt.Errorf("%s: %w", o.require, err)
		}
		return t, err
	}
}

// report logs a choice: auto's in one line when it changed, an explicit
// kind's transport, or its fallback once.
func (o *xdpOpener) report(c transport.Choice) {
	switch {
	case c.Transport == nil: // the error says why
	case c.Asked == transport.KindAuto:
		o.logAuto(c)
	case c.FellBack():
		o.once.Do(func() {
			o.log.Warn(c.Asked.Label()+" unavailable, falling back to kernel UDP", "iface", c.Iface, "reason", c.Err())
		})
	case c.Kind == transport.KindXDP:
		x := c.Transport.(*transport.XDP)
		st, _ := x.Stats()
		o.log.Info("datagrams over AF_XDP", "iface", st.Iface, "attach", st.Attach,
			"zero_copy", st.ZeroCopy, "copy_reason", st.CopyWhy, "sockets", st.Sockets, "busy_poll", st.BusyPoll, "local", x.LocalAddr())
	case c.Kind == transport.KindAFPacket:
		o.log.Info("datagrams over AF_PACKET", "iface", c.Iface, "local", c.Transport.LocalAddr())
	}
}

// logAuto logs auto's choice and why, in one line, when it differs from
// the last one logged (a mirror opens a transport per connection).
func (o *xdpOpener) logAuto(c transport.Choice) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.logged && c.Kind == o.choice {
		return
	}
	o.choice, o.logged = c.Kind, true
	args := []any{"iface", c.Iface, "local", c.Transport.LocalAddr()}
	if c.XDPErr != nil {
		args = append(args, "xdp_unavailable", c.XDPErr)
	}
	if c.AFPacketErr != nil {
		args = append(args, "afpacket_unavailable", c.AFPacketErr)
	}
	o.log.Info("transport auto: datagrams over "+c.Kind.Label(), args...)
}
