package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// lineFlags describe line B of a source or a mirror that takes two lines
// (A/B feeds: every datagram on two networks, the first copy applied):
//
//	serve  --multicast-b GROUP:PORT --iface-b ADDR [--transport-b KIND] [--xdp-b IFACE]
//	serve  --udp PORT --iface-b ADDR [...]   (a unicast line B: punches on ADDR:PORT)
//	mirror [--unicast] --iface-b ADDR [--transport-b KIND] [--xdp-b IFACE] [--line-window D]
//
// Line A is what the other flags describe. They are keys of ringfire run's
// tables too.
type lineFlags struct {
	multicast string        // serve --multicast-b
	iface     string        // --iface-b
	kind      string        // --transport-b
	xdp       string        // --xdp-b
	window    time.Duration // mirror --line-window
}

func (l *lineFlags) addCommon(fs *flag.FlagSet) {
	fs.StringVar(&l.kind, "transport-b", "", "line B's datagram `transport`: auto, xdp, afpacket or udp (default: xdp with --xdp-b, else udp)")
	fs.StringVar(&l.xdp, "xdp-b", "", "carry line B's datagrams over AF_XDP on interface `IFACE` (falls back to kernel UDP)")
}

func (l *lineFlags) addServe(fs *flag.FlagSet) {
	fs.StringVar(&l.multicast, "multicast-b", "", "also send every datagram on a second line: to this multicast `group:port` through --iface-b (A/B feeds; needs --multicast)")
	fs.StringVar(&l.iface, "iface-b", "", "interface (`address` or name) of line B: its multicast leaves by it; with --udp, unicast mirrors that announce two lines punch to it on the --udp port too, and get every datagram on both lines")
	l.addCommon(fs)
}

func (l *lineFlags) addMirror(fs *flag.FlagSet) {
	fs.StringVar(&l.iface, "iface-b", "", "also take a source's line B (serve --multicast-b; with --unicast, serve --udp --iface-b: the mirror punches from this address too) on this local interface (`address` or name); the first copy of each frame is applied")
	fs.DurationVar(&l.window, "line-window", 0, "with --iface-b, how long a hole waits for the other line before it is NAKed (`duration`, at most 100ms; 0: 1ms; negative: NAK at once)")
	l.addCommon(fs)
}

// set reports whether any line B flag but --line-window was given.
func (l *lineFlags) set() bool {
	return l.multicast != "" || l.iface != "" || l.kind != "" || l.xdp != ""
}

// opener checks --transport-b and --xdp-b and returns line B's transport
// opener, with line A's AF_XDP settings (a's).
func (l *lineFlags) opener(a *xdpFlags, wait replica.WaitMode, log *slog.Logger) (*xdpOpener, error) {
	x := *a
	x.kind, x.tiface, x.iface, x.requireXDP = l.kind, "", l.xdp, false
	if x.kind == "" {
		x.kind = "udp"
		if x.iface != "" {
			x.kind = "xdp"
		}
	}
	k, err := transport.ParseKind(x.kind)
	switch {
	case err != nil:
		return nil, usagef("--transport-b %q: want auto, xdp, afpacket or udp", l.kind)
	case x.iface != "" && k != transport.KindXDP && k != transport.KindAuto:
		return nil, usagef("--xdp-b names an AF_XDP interface: with --transport-b %s line B uses --iface-b's interface", l.kind)
	}
	x.require = a.require && k != transport.KindUDP
	tc, err := x.check()
	if err != nil {
		return nil, err
	}
	x.busyPollFor(&tc, wait)
	return newOpener(tc, &x, log.With("line", "B")), nil
}

// lineIface parses --iface-b.
func lineIface(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	a, err := ifaceAddr(s)
	if err != nil {
		return a, usagef("--iface-b %q: want an IPv4 address or an interface name", s)
	}
	return a, nil
}

// serve sets line B in a source's configuration.
func (l *lineFlags) serve(cfg *replica.ServerConfig, a *xdpFlags, log *slog.Logger) error {
	if !l.set() {
		return nil
	}
	if l.multicast == "" {
		return l.serveUnicast(cfg, a, log)
	}
	g, err := netip.ParseAddrPort(l.multicast)
	if err != nil || !g.Addr().Is4() || !g.Addr().IsMulticast() || g.Port() == 0 {
		return usagef("--multicast-b %q: want an IPv4 multicast GROUP:PORT such as 239.255.1.1:7401", l.multicast)
	}
	switch {
	case !cfg.Multicast.IsValid():
		return usagef("--multicast-b needs --multicast (line A)")
	case g == cfg.Multicast:
		return usagef("--multicast-b %v: line A's group (--multicast); line B needs its own", g)
	}
	if cfg.IfaceB, err = lineIface(l.iface); err != nil {
		return err
	}
	o, err := l.opener(a, cfg.Wait, log)
	if err != nil {
		return err
	}
	cfg.MulticastB, cfg.NewTransportB = g, o.serverTransport()
	return nil
}

// serveUnicast sets a unicast line B only (--udp and --iface-b, no
// --multicast-b): unicast mirrors that announce two lines punch to
// --iface-b on the --udp port too.
func (l *lineFlags) serveUnicast(cfg *replica.ServerConfig, a *xdpFlags, log *slog.Logger) error {
	switch {
	case cfg.UDPPort == 0:
		return usagef("--iface-b, --transport-b and --xdp-b describe line B: they need --multicast-b or --udp (a unicast line B)")
	case l.iface == "":
		return usagef("--iface-b: a unicast line B (--udp without --multicast-b) needs the address its mirrors punch")
	}
	var err error
	if cfg.IfaceB, err = lineIface(l.iface); err != nil {
		return err
	}
	if cfg.IfaceB.IsUnspecified() {
		return usagef("--iface-b %q: a unicast line B needs the address its mirrors punch, not 0.0.0.0", l.iface)
	}
	o, err := l.opener(a, cfg.Wait, log)
	if err != nil {
		return err
	}
	cfg.NewTransportB = o.serverTransport()
	return nil
}

// mirror sets line B in a mirror's configuration.
func (l *lineFlags) mirror(cfg *replica.MirrorConfig, a *xdpFlags, log *slog.Logger) error {
	if l.window > 100*time.Millisecond {
		return usagef("--line-window %v: want at most 100ms (a hole waits that long before its NAK)", l.window)
	}
	if !l.set() {
		if l.window != 0 {
			return usagef("--line-window needs --iface-b (a second line)")
		}
		return nil
	}
	switch {
	case l.iface == "" && l.xdp == "":
		return usagef("--transport-b needs --iface-b or --xdp-b (line B's interface)")
	case cfg.TCPOnly:
		return usagef("--iface-b: a second line carries datagrams (not with --tcp)")
	}
	var err error
	if cfg.IfaceB, err = lineIface(l.iface); err != nil {
		return err
	}
	o, err := l.opener(a, cfg.Wait, log)
	if err != nil {
		return err
	}
	cfg.NewTransportB, cfg.LineWindow = o.mirrorTransport(), l.window
	return nil
}

// printLineStats prints a mirror's counters per line, if it takes two.
func printLineStats(w io.Writer, st replica.MirrorStats) {
	if st.Lines[0].Name == "" {
		return
	}
	for i, l := range st.Lines {
		state := "up"
		if !l.Up {
			state = "down"
		}
		fmt.Fprintf(w, "  line %c (%s, %s): datagrams %d, first %d, late %d (<10µs %d, <100µs %d, <1ms %d, <10ms %d, later %d), lost %d, downs %d, ups %d\n",
			'A'+i, l.Name, state, l.Received, l.First, l.Late, l.LateBy[0], l.LateBy[1], l.LateBy[2], l.LateBy[3], l.LateBy[4], l.Lost, l.Downs, l.Ups)
	}
}
