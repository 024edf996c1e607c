package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ringfire/ringfire/bpf"
)

func runDetach(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c     common
		force bool
	)
	fs := newFlagSet("detach", "IFACE [--force]",
		"Remove the pins of IFACE's steering program and detach it, at once, even\n"+
			"while ringfire processes hold it (refused without --force while one has\n"+
			"sockets registered). Stale pins (of a deleted interface) are removed.", stderr, &c)
	fs.BoolVar(&force, "force", false, "detach even while ringfire processes use the program")
	pos, err := parseArgs(fs, args, 1, "IFACE")
	if err != nil {
		return helpOr(err)
	}
	return c.do(func() error { return detach(stdout, &c, pos[0], force) })
}

func detach(stdout io.Writer, c *common, ifname string, force bool) error {
	dir, err := bpf.PinDir(c.bpffs, ifname)
	if err != nil {
		return err
	}
	p, err := bpf.LoadPinned(dir)
	switch {
	case errors.Is(err, bpf.ErrStale):
		if err := bpf.RemovePins(dir); err != nil {
			return permHint(err)
		}
		fmt.Fprintf(stdout, "removed stale pins at %s (nothing was attached)\n", dir)
		return nil
	case errors.Is(err, bpf.ErrNotFound):
		if l, lerr := linkByName(ifname); lerr == nil {
			if x := xdpOf(l); x != nil {
				if !bpf.IsFS(c.bpffs) {
					return fmt.Errorf("%w for %s: %s", errNotAttached, ifname, noFS(c))
				}
				return fmt.Errorf("%w for %s: its XDP program (id %d, %s mode) was not attached by xdpctl; remove it through its owner (e.g. `ip link set dev %s xdp off`)", errNotAttached, ifname, x.ProgID, x.Mode, ifname)
			}
		} else {
			return lerr
		}
		return openHint(err, ifname, c)
	case err != nil:
		return permHint(err)
	}
	defer p.Close()
	if users := liveUsers(p); len(users) > 0 && !force {
		return fmt.Errorf("%w: %s still steers to the sockets of %s; stop them first, or pass --force", errInUse, ifname, strings.Join(users, ", "))
	}
	id := p.ProgramID()
	if err := p.Unpin(); err != nil {
		return permHint(err)
	}
	if err := p.Detach(); err != nil {
		return permHint(err)
	}
	fmt.Fprintf(stdout, "detached steering program id %d from %s and removed %s\n", id, ifname, dir)
	return nil
}

// liveUsers lists the live processes with sockets registered in p, as
// "pid N (queues ...)".
func liveUsers(p *bpf.Program) []string {
	so, err := p.SocketOwners()
	if err != nil {
		return nil
	}
	queues := map[int][]string{}
	var pids []int
	for _, o := range so {
		if !socketLive(o.PID, o.Ino) {
			continue
		}
		if queues[o.PID] == nil {
			pids = append(pids, o.PID)
		}
		queues[o.PID] = append(queues[o.PID], fmt.Sprint(o.Queue))
	}
	var out []string
	for _, pid := range pids {
		who := fmt.Sprintf("pid %d", pid)
		if pid == os.Getpid() {
			who = "this process"
		}
		out = append(out, fmt.Sprintf("%s (queue %s)", who, strings.Join(queues[pid], ",")))
	}
	return out
}
