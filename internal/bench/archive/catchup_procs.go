package archive

import (
	"fmt"
	"net/netip"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/proc"
)

// The catch-up's ringfire processes: serve in namespace A, mirror in
// namespace B, across the run's veth pair.

// CatchupTransports are the live paths the catch-up takes: everything
// over TCP, or datagrams by AF_XDP unicast (the deployed section's) with
// the history over TCP.
var CatchupTransports = []string{"xdp-unicast", "tcp"}

// catchupPort is serve's TCP port; catchupUDP its unicast port.
const (
	catchupPort = 7470
	catchupUDP  = 7671
)

// network makes the catch-up's second launcher (namespace B) and finds
// the ringfire binary, once.
func (b *Bench) network() error {
	if b.pair == nil {
		return fmt.Errorf("archive: catch-up: no network namespace pair")
	}
	if b.ringfire == "" {
		bin, built, err := proc.FindRingfire(b.cfg.Ringfire, b.self)
		if err != nil {
			return err
		}
		b.ringfire, b.built = bin, built
	}
	if b.lb == nil {
		b.lb = proc.NewLauncher(b.pair.B)
	}
	return nil
}

// startRingfire starts a ringfire process (argv after the binary) from l.
func (ps *procs) startRingfire(l *proc.Launcher, name string, args []string) (*proc.Proc, error) {
	p, err := proc.Start(l, name, args, nil, false)
	if err != nil {
		return nil, err
	}
	*ps = append(*ps, p)
	return p, nil
}

func (b *Bench) bind() netip.AddrPort { return netip.AddrPortFrom(b.pair.AAddr, catchupPort) }

// startServe starts ringfire serve of ring with its archive in namespace
// A, the repair budget off, and waits until it listens.
func (b *Bench) startServe(ps *procs, ring, arch string) (*proc.Proc, error) {
	args := []string{b.ringfire, "serve", ring, "--archive", arch, "--bind", b.bind().String(), "--iface", b.pair.AAddr.String(),
		"--repair-rate", "off", "--repair-addr-rate", "off"}
	if b.cfg.CatchupTransport == "xdp-unicast" {
		args = append(args, "--udp", fmt.Sprint(catchupUDP), "--xdp", b.pair.AIf, "--require-xdp")
	}
	p, err := ps.startRingfire(b.l, "serve", args)
	if err != nil {
		return nil, err
	}
	var lerr error
	err = pace.Until(readyWait, "serve to listen", func() bool {
		ok, err := proc.Listening(b.pair.A, b.bind())
		if lerr = err; err == nil {
			lerr = p.Alive()
		}
		return ok || lerr != nil
	})
	if lerr != nil {
		return nil, lerr
	}
	return p, err
}

// mirrorArgs is the ringfire mirror command line, from sequence 1.
func (b *Bench) mirrorArgs(ring string) []string {
	args := []string{b.ringfire, "mirror", b.bind().String(), ring, "--from", "1", "--iface", b.pair.BAddr.String(),
		"--reconnect-ms", "50", "--json"}
	if b.cfg.CatchupTransport == "xdp-unicast" {
		return append(args, "--unicast", "--xdp", b.pair.BIf, "--require-xdp")
	}
	return append(args, "--tcp")
}
