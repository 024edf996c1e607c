package main

import (
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/transport"
	"github.com/ringfire/ringfire/replica"
)

// xdpFlags are the AF_XDP options of serve and mirror.
type xdpFlags struct {
	iface   string // --xdp IFACE: carry datagrams over AF_XDP on IFACE
	require bool   // --require-xdp: fail instead of falling back
	mode    string // --xdp-mode auto|native|generic
	busyUS  int    // --xdp-busy-poll-us: SO_BUSY_POLL on the AF_XDP sockets
}

func (x *xdpFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&x.iface, "xdp", "", "carry datagrams over AF_XDP on interface `IFACE` (falls back to kernel UDP)")
	fs.BoolVar(&x.require, "require-xdp", false, "fail instead of falling back to kernel UDP when AF_XDP cannot be used")
	fs.StringVar(&x.mode, "xdp-mode", "auto", "attach the XDP program in `mode` native, generic or auto")
	fs.IntVar(&x.busyUS, "xdp-busy-poll-us", 0, "busy-poll the AF_XDP sockets for `µs` per call (0: off)")
}

func (x *xdpFlags) check() (bpf.Mode, error) {
	if x.require && x.iface == "" {
		return 0, usagef("--require-xdp needs --xdp IFACE")
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

// xdpOpener opens AF_XDP transports, or says once why it cannot and lets
// the caller fall back to kernel UDP.
type xdpOpener struct {
	flags xdpFlags
	mode  bpf.Mode
	log   *slog.Logger
	once  sync.Once
}

// open returns an AF_XDP transport, or nil when the caller should use kernel
// UDP (after logging why), or an error with --require-xdp.
func (o *xdpOpener) open(cfg transport.XDPConfig) (replica.Transport, error) {
	if o.flags.iface == "" {
		return nil, nil
	}
	cfg.Iface, cfg.Mode = o.flags.iface, o.mode
	cfg.Socket.BusyPoll = time.Duration(o.flags.busyUS) * time.Microsecond
	t, err := transport.NewXDP(cfg)
	if err == nil {
		st, _ := t.Stats()
		o.log.Info("datagrams over AF_XDP", "iface", st.Iface, "attach", st.Attach,
			"zero_copy", st.ZeroCopy, "copy_reason", st.CopyWhy, "sockets", st.Sockets, "local", t.LocalAddr())
		return t, nil
	}
	if o.flags.require {
		return nil, fmt.Errorf("--require-xdp: %w", err)
	}
	o.once.Do(func() {
		o.log.Warn("AF_XDP unavailable, falling back to kernel UDP", "iface", o.flags.iface, "reason", err)
	})
	return nil, nil
}

// serverTransport is the server's transport factory: AF_XDP when asked
// for and possible, else kernel UDP.
func (o *xdpOpener) serverTransport(u replica.UDPConfig) (replica.Transport, error) {
	t, err := o.open(transport.ForServer(transport.XDPConfig{}, u))
	if t != nil || err != nil {
		return t, err
	}
	k, err := replica.NewUDP(u)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// mirrorTransport is the mirror's transport factory: AF_XDP when asked for
// and possible, else kernel UDP.
func (o *xdpOpener) mirrorTransport(spec replica.DatagramSpec) (replica.Transport, error) {
	t, err := o.open(transport.ForMirror(transport.XDPConfig{}, spec))
	if t != nil || err != nil {
		return t, err
	}
	return replica.NewMirrorUDP(spec)
}
