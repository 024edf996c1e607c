package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// xdpFlags are the datagram transport options of serve and mirror (named
// for the first of them, --xdp):
//
//	--transport auto|xdp|afpacket|udp   (default: xdp with --xdp, else udp)
//	--transport-iface IFACE             the interface of xdp, afpacket, auto
//	--xdp IFACE                         shorthand: --transport xdp on IFACE
//
// The interface of a kernel-bypass transport is --transport-iface, else
// --xdp's, else the one holding the local address (--iface). auto tries
// AF_XDP, then AF_PACKET, then kernel UDP, and logs its choice and why in
// one line. An explicit xdp or afpacket falls back to kernel UDP with one
// warning, unless --require-xdp (which then applies to either).
type xdpFlags struct {
	kind    string // --transport
	tiface  string // --transport-iface
	iface   string // --xdp IFACE
	require bool   // --require-xdp: fail instead of falling back
	mode    string // --xdp-mode auto|native|generic
	busyUS  int    // --xdp-busy-poll-us: SO_BUSY_POLL on the AF_XDP sockets
}

func (x *xdpFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&x.kind, "transport", "", "datagram `transport`: auto (AF_XDP, else AF_PACKET, else kernel UDP), xdp, afpacket or udp (default: xdp with --xdp, else udp)")
	fs.StringVar(&x.tiface, "transport-iface", "", "interface `IFACE` of --transport xdp, afpacket or auto (default: --xdp's, else the one holding --iface's address)")
	fs.StringVar(&x.iface, "xdp", "", "carry datagrams over AF_XDP on interface `IFACE` (falls back to kernel UDP); with --transport, only names the interface")
	fs.BoolVar(&x.require, "require-xdp", false, "fail instead of falling back to kernel UDP when AF_XDP (or --transport afpacket) cannot be used")
	fs.StringVar(&x.mode, "xdp-mode", "auto", "attach the XDP program in `mode` native, generic or auto")
	fs.IntVar(&x.busyUS, "xdp-busy-poll-us", 0, "busy-poll the AF_XDP sockets for `µs` per call (0: off)")
}

func (x *xdpFlags) check() (bpf.Mode, error) {
	switch x.kind {
	case "":
		x.kind = "udp"
		if x.iface != "" {
			x.kind = "xdp"
		}
	case "auto", "xdp", "afpacket", "udp":
	default:
		return 0, usagef("--transport %q: want auto, xdp, afpacket or udp", x.kind)
	}
	if x.require && x.kind != "xdp" && x.kind != "afpacket" {
		return 0, usagef("--require-xdp needs --xdp IFACE (or --transport xdp or afpacket)")
	}
	if x.busyUS < 0 || x.busyUS > 1_000_000 {
		return 0, usagef("--xdp-busy-poll-us %d: want 0..1000000", x.busyUS)
	}
	switch x.mode {
	case "auto":
		return bpf.ModeAuto, nil
	case "native":
		return bpf.ModeNative, nil
	case "generic":
		return bpf.ModeGeneric, nil
	}
	return 0, usagef("--xdp-mode %q: want auto, native or generic", x.mode)
}

// bypass reports whether datagrams may go over AF_XDP or AF_PACKET (after
// check).
func (x *xdpFlags) bypass() bool { return x.kind != "udp" }

// ifaceFor names the interface of a kernel-bypass transport whose local
// address is local.
func (x *xdpFlags) ifaceFor(local netip.Addr) (string, error) {
	switch {
	case x.tiface != "":
		return x.tiface, nil
	case x.iface != "":
		return x.iface, nil
	case !local.IsValid() || local.IsUnspecified():
		return "", errors.New("no interface: give --transport-iface IFACE (or --iface)")
	}
	l, err := neigh.LinkByAddr(local)
	if err != nil {
		return "", err
	}
	return l.Name, nil
}

var kindNames = map[string]string{"xdp": "AF_XDP", "afpacket": "AF_PACKET", "udp": "kernel UDP"}

// xdpOpener opens the datagram transport the flags ask for, or says why it
// cannot and lets the caller fall back to kernel UDP.
type xdpOpener struct {
	flags xdpFlags
	mode  bpf.Mode
	log   *slog.Logger
	once  sync.Once

	mu     sync.Mutex
	choice string // what auto chose and logged last
}

// open returns a kernel-bypass transport, or nil when the caller should
// use kernel UDP (after logging why), or an error with --require-xdp.
func (o *xdpOpener) open(local netip.Addr, xc transport.XDPConfig, pc transport.AFPacketConfig) (replica.Transport, error) {
	kind := o.flags.kind
	if kind == "udp" || kind == "" {
		return nil, nil
	}
	ifname, ierr := o.flags.ifaceFor(local)
	var t replica.Transport
	var errXDP, errPkt error
	if kind == "xdp" || kind == "auto" {
		t, errXDP = o.openXDP(ifname, ierr, xc, kind == "xdp")
	}
	if t == nil && (kind == "afpacket" || kind == "auto") {
		t, errPkt = o.openPacket(ifname, ierr, pc, kind == "afpacket")
	}
	if kind == "auto" {
		o.logAuto(t, ifname, errXDP, errPkt)
		return t, nil
	}
	err := errors.Join(errXDP, errPkt)
	if t != nil || err == nil {
		return t, nil
	}
	name := kindNames[kind]
	if o.flags.require {
		return nil, fmt.Errorf("--require-xdp: %w", err)
	}
	o.once.Do(func() {
		o.log.Warn(name+" unavailable, falling back to kernel UDP", "iface", ifname, "reason", err)
	})
	return nil, nil
}

func (o *xdpOpener) openXDP(ifname string, ierr error, cfg transport.XDPConfig, say bool) (replica.Transport, error) {
	if ierr != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrXDPUnavailable, ierr)
	}
	cfg.Iface, cfg.Mode = ifname, o.mode
	cfg.Socket.BusyPoll = time.Duration(o.flags.busyUS) * time.Microsecond
	t, err := transport.NewXDP(cfg)
	if err != nil {
		return nil, err
	}
	if say {
		st, _ := t.Stats()
		o.log.Info("datagrams over AF_XDP", "iface", st.Iface, "attach", st.Attach,
			"zero_copy", st.ZeroCopy, "copy_reason", st.CopyWhy, "sockets", st.Sockets, "local", t.LocalAddr())
	}
	return t, nil
}

func (o *xdpOpener) openPacket(ifname string, ierr error, cfg transport.AFPacketConfig, say bool) (replica.Transport, error) {
	if ierr != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrAFPacketUnavailable, ierr)
	}
	cfg.Iface = ifname
	t, err := transport.NewAFPacket(cfg)
	if err != nil {
		return nil, err
	}
	if say {
		o.log.Info("datagrams over AF_PACKET", "iface", ifname, "local", t.LocalAddr())
	}
	return t, nil
}

// logAuto logs auto's choice and why, in one line, when it differs from
// the last one logged (a mirror opens a transport per connection).
func (o *xdpOpener) logAuto(t replica.Transport, ifname string, errXDP, errPkt error) {
	chose := "udp"
	if t != nil {
		chose = replica.TransportName(t)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if chose == o.choice {
		return
	}
	o.choice = chose
	args := []any{"iface", ifname, "local", localOf(t)}
	if errXDP != nil {
		args = append(args, "xdp_unavailable", errXDP)
	}
	if errPkt != nil {
		args = append(args, "afpacket_unavailable", errPkt)
	}
	o.log.Info("transport auto: datagrams over "+kindNames[chose], args...)
}

func localOf(t replica.Transport) any {
	if t == nil {
		return "kernel"
	}
	return t.LocalAddr()
}

// serverTransport is the server's transport factory: the kernel-bypass
// transport asked for when possible, else kernel UDP.
func (o *xdpOpener) serverTransport(u replica.UDPConfig) (replica.Transport, error) {
	t, err := o.open(u.Iface, transport.XDPForServer(transport.XDPConfig{}, u), transport.AFPacketForServer(transport.AFPacketConfig{}, u))
	if t != nil || err != nil {
		return t, err
	}
	k, err := replica.NewUDP(u)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// mirrorTransport is the mirror's transport factory: the kernel-bypass
// transport asked for when possible, else kernel UDP.
func (o *xdpOpener) mirrorTransport(spec replica.DatagramSpec) (replica.Transport, error) {
	t, err := o.open(spec.Iface, transport.XDPForMirror(transport.XDPConfig{}, spec), transport.AFPacketForMirror(transport.AFPacketConfig{}, spec))
	if t != nil || err != nil {
		return t, err
	}
	return replica.NewMirrorUDP(spec)
}
