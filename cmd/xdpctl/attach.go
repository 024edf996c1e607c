package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ringfire/ringfire/bpf"
)

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func runAttach(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c                  common
		mode               string
		ports, groups, ads listFlag
	)
	fs := newFlagSet("attach", "IFACE [--mode native|generic|auto] [--port P]... [--group G]... [--addr A]...",
		"Load the steering program, attach it to IFACE through a BPF link and pin the\n"+
			"link and maps under the bpffs (mounted if missing), so the program outlives\n"+
			"xdpctl; ringfire serve/mirror --xdp then add their flows and sockets to it.\n"+
			"Each --port is steered for every --group and --addr (default: the\n"+
			"interface's IPv4 addresses when no --group is given).", stderr, &c)
	fs.StringVar(&mode, "mode", "auto", "attach in `mode` native, generic or auto (native, else generic)")
	fs.Var(&ports, "port", "steer UDP destination `port` (repeatable)")
	fs.Var(&groups, "group", "steer multicast `group` (repeatable)")
	fs.Var(&ads, "addr", "steer unicast destination `address` (repeatable)")
	pos, err := parseArgs(fs, args, 1, "IFACE")
	if err != nil {
		return helpOr(err)
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	flows, err := parseFlows(ports, groups, ads)
	if err != nil {
		return err
	}
	return c.do(func() error { return attach(stdout, stderr, &c, pos[0], m, flows, len(groups)+len(ads) == 0) })
}

func parseMode(s string) (bpf.Mode, error) {
	switch s {
	case "auto":
		return bpf.ModeAuto, nil
	case "native":
		return bpf.ModeNative, nil
	case "generic":
		return bpf.ModeGeneric, nil
	}
	return 0, usagef("--mode %q: want native, generic or auto", s)
}

// parseFlows returns the flows of every port to every group and address;
// a nil Addr stands for the interface's addresses.
func parseFlows(ports, groups, addrs listFlag) ([]bpf.Flow, error) {
	if len(ports) == 0 && len(groups)+len(addrs) > 0 {
		return nil, usagef("--group and --addr need a --port")
	}
	var as []netip.Addr
	for _, g := range groups {
		a, err := netip.ParseAddr(g)
		if err != nil || !a.Is4() || !a.IsMulticast() {
			return nil, usagef("--group %q: want an IPv4 multicast address", g)
		}
		as = append(as, a)
	}
	for _, s := range addrs {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() || a.IsUnspecified() {
			return nil, usagef("--addr %q: want an IPv4 address", s)
		}
		as = append(as, a)
	}
	if len(as) == 0 {
		as = []netip.Addr{{}}
	}
	var out []bpf.Flow
	for _, s := range ports {
		p, err := strconv.ParseUint(s, 10, 16)
		if err != nil || p == 0 {
			return nil, usagef("--port %q: want 1..65535", s)
		}
		for _, a := range as {
			out = append(out, bpf.Flow{Addr: a, Port: uint16(p)})
		}
	}
	return out, nil
}

// attach runs in the interface's namespace. ifaceAddrs: flows without an
// address are for the interface's IPv4 addresses.
func attach(stdout, stderr io.Writer, c *common, ifname string, mode bpf.Mode, flows []bpf.Flow, ifaceAddrs bool) error {
	l, err := linkByName(ifname)
	if err != nil {
		return err
	}
	if ifaceAddrs && len(flows) > 0 {
		if flows, err = withIfaceAddrs(l.Attrs().Index, ifname, flows); err != nil {
			return err
		}
	}
	if !bpf.IsFS(c.bpffs) && privateMounts() {
		return fmt.Errorf("%w: no bpffs at %s in this mount namespace (ip netns exec?): pins made here would vanish, and the program with them, when xdpctl exits; run it from the host's mount namespace with --netns NAME instead", errPrivateMount, c.bpffs)
	}
	mounted, err := bpf.MountFS(c.bpffs)
	if err != nil {
		return fsHint(err, c.bpffs)
	}
	if mounted {
		fmt.Fprintf(stderr, "xdpctl: mounted bpffs at %s\n", c.bpffs)
	}
	dir, err := bpf.PinDir(c.bpffs, ifname)
	if err != nil {
		return err
	}
	if err := clearStale(stderr, dir, ifname, l.Attrs().Index); err != nil {
		return err
	}
	p, err := bpf.Load()
	if err != nil {
		return permHint(err)
	}
	defer p.Close()
	if err := p.Attach(l.Attrs().Index, mode); err != nil {
		if x := xdpOf(l); x != nil {
			err = fmt.Errorf("%w (program id %d attached in %s mode)", err, x.ProgID, x.Mode)
		}
		return attachHint(err, ifname, mode)
	}
	for _, f := range flows {
		if err := p.AddFlow(f); err != nil {
			return err // Close detaches: nothing is left behind
		}
	}
	if err := p.Pin(dir); err != nil {
		return fsHint(permHint(err), c.bpffs)
	}
	fmt.Fprintf(stdout, "attached steering program id %d to %s (index %d) in %s mode, pinned at %s\n",
		p.ProgramID(), ifname, l.Attrs().Index, p.Mode(), dir)
	for _, f := range flows {
		fmt.Fprintf(stdout, "steering %v\n", f)
	}
	return nil
}

// clearStale fails if dir holds a live pinned program and removes stale
// pins (of an interface deleted since, or a forcibly detached link).
func clearStale(stderr io.Writer, dir, ifname string, index int) error {
	p, err := bpf.LoadPinned(dir)
	switch {
	case errors.Is(err, bpf.ErrNotFound):
		return nil
	case err == nil:
		id, mode, at := p.ProgramID(), p.Mode(), p.Ifindex()
		p.Close()
		if at == index {
			return fmt.Errorf("%w: %s already has the steering program (id %d, %s mode) pinned at %s (see `xdpctl status %s`, or `xdpctl detach %s` first)", errBusy, ifname, id, mode, dir, ifname, ifname)
		}
		return fmt.Errorf("%w: the pins at %s attach a program to interface index %d, which %s is not (renamed or re-created?); `xdpctl detach %s` removes them", errBusy, dir, at, ifname, ifname)
	case !errors.Is(err, bpf.ErrStale):
		return permHint(err)
	}
	if err := bpf.RemovePins(dir); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdpctl: removed stale pins at %s\n", dir)
	return nil
}
