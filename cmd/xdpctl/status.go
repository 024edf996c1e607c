package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/ringfire/ringfire/bpf"
)

// ifaceStatus is what status reports about one interface.
type ifaceStatus struct {
	Iface   string       `json:"iface"`
	Index   int          `json:"index,omitempty"` // 0: the interface is gone
	XDP     *attached    `json:"xdp,omitempty"`   // the program netlink reports
	Pinned  string       `json:"pinned,omitempty"`
	Stale   string       `json:"stale,omitempty"` // why the pins are stale
	Flows   []flowStatus `json:"flows,omitempty"`
	Sockets []sockStatus `json:"sockets,omitempty"`
	Fault   *faultStatus `json:"fault,omitempty"`
}

type faultStatus struct {
	DropEvery uint32  `json:"drop_every"`
	DropRatio float64 `json:"drop_ratio"`
}

type flowStatus struct {
	Flow  string `json:"flow"`
	Owner int    `json:"owner_pid"` // 0: added by xdpctl attach
	Live  bool   `json:"live"`      // the owner runs (always true for 0)
}

type sockStatus struct {
	Queue int    `json:"queue"`
	PID   int    `json:"pid"`
	Ino   uint64 `json:"socket_inode"`
	Live  bool   `json:"live"` // the process still holds the socket
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c      common
		asJSON bool
	)
	fs := newFlagSet("status", "[IFACE] [--json]",
		"Show the XDP program of IFACE, or of every interface of the namespace that\n"+
			"has one or has pins: program id, mode, the pin directory, the steered flows\n"+
			"and who added them, which queues have AF_XDP sockets registered and by\n"+
			"which process, and the fault setting.", stderr, &c)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := parseArgs(fs, args, 0, "IFACE")
	if err != nil {
		return helpOr(err)
	}
	return c.do(func() error {
		var sts []ifaceStatus
		if len(pos) == 1 {
			st, err := statusOf(&c, pos[0])
			if err != nil {
				return err
			}
			sts = append(sts, st)
		} else if sts, err = statusAll(&c); err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(sts)
		}
		if !bpf.IsFS(c.bpffs) {
			fmt.Fprintf(stderr, "xdpctl: %s\n", noFS(&c))
		}
		if len(sts) == 0 {
			fmt.Fprintln(stdout, "no XDP program and no pins in this network namespace")
		}
		for _, st := range sts {
			printStatus(stdout, st)
		}
		return nil
	})
}

// statusAll reports every interface that has an XDP program or pins.
func statusAll(c *common) ([]ifaceStatus, error) {
	names := map[string]bool{}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, permHint(err)
	}
	for _, l := range links {
		if xdpOf(l) != nil {
			names[l.Attrs().Name] = true
		}
	}
	if dir, err := bpf.PinDir(c.bpffs, "x"); err == nil {
		ents, _ := os.ReadDir(filepath.Dir(dir))
		for _, e := range ents {
			names[e.Name()] = true
		}
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	var out []ifaceStatus
	for _, n := range sorted {
		st, err := statusOf(c, n)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func statusOf(c *common, ifname string) (ifaceStatus, error) {
	st := ifaceStatus{Iface: ifname}
	l, lerr := linkByName(ifname)
	if lerr == nil {
		st.Index, st.XDP = l.Attrs().Index, xdpOf(l)
	}
	dir, err := bpf.PinDir(c.bpffs, ifname)
	if err != nil {
		return st, err
	}
	p, err := bpf.LoadPinned(dir)
	switch {
	case errors.Is(err, bpf.ErrNotFound):
		return st, lerr // no pins: a missing interface is an error
	case errors.Is(err, bpf.ErrStale):
		st.Pinned, st.Stale = dir, err.Error()
		return st, nil
	case err != nil:
		return st, permHint(err)
	}
	defer p.Close()
	st.Pinned = dir
	if p.Ifindex() != st.Index {
		st.Stale = fmt.Sprintf("pinned for interface index %d, which %s is not", p.Ifindex(), ifname)
		return st, nil
	}
	fe, err := p.FlowEntries()
	if err != nil {
		return st, err
	}
	for _, f := range fe {
		st.Flows = append(st.Flows, flowStatus{Flow: f.Flow.String(), Owner: f.Owner, Live: f.Owner == 0 || processLive(f.Owner)})
	}
	so, err := p.SocketOwners()
	if err != nil {
		return st, err
	}
	for _, o := range so {
		st.Sockets = append(st.Sockets, sockStatus{Queue: o.Queue, PID: o.PID, Ino: o.Ino, Live: socketLive(o.PID, o.Ino)})
	}
	ft, err := p.Fault()
	if err != nil {
		return st, err
	}
	st.Fault = &faultStatus{ft.DropEvery, ft.DropRatio}
	return st, nil
}

func printStatus(w io.Writer, st ifaceStatus) {
	name := st.Iface
	if st.Index != 0 {
		name = fmt.Sprintf("%s (index %d)", st.Iface, st.Index)
	}
	switch {
	case st.Stale != "":
		fmt.Fprintf(w, "%s: stale pins at %s: %s; `xdpctl detach %s` removes them\n", name, st.Pinned, st.Stale, st.Iface)
		return
	case st.XDP == nil:
		fmt.Fprintf(w, "%s: no XDP program\n", name)
		return
	case st.Pinned == "":
		fmt.Fprintf(w, "%s: XDP program id %d in %s mode, not pinned by xdpctl (a ringfire process's own, or another tool's)\n", name, st.XDP.ProgID, st.XDP.Mode)
		return
	}
	fmt.Fprintf(w, "%s: steering program id %d in %s mode, pinned at %s\n", name, st.XDP.ProgID, st.XDP.Mode, st.Pinned)
	var b strings.Builder
	for _, f := range st.Flows {
		who := "xdpctl attach"
		if f.Owner != 0 {
			who = fmt.Sprintf("pid %d", f.Owner)
			if !f.Live {
				who += ", exited"
			}
		}
		fmt.Fprintf(&b, "    %-21s %s\n", f.Flow, who)
	}
	fmt.Fprintf(w, "  flows: %d\n%s", len(st.Flows), b.String())
	b.Reset()
	for _, s := range st.Sockets {
		state := "live"
		if !s.Live {
			state = "gone (process exited without unregistering)"
		}
		fmt.Fprintf(&b, "    queue %-3d pid %d socket:[%d] %s\n", s.Queue, s.PID, s.Ino, state)
	}
	fmt.Fprintf(w, "  sockets: %d\n%s", len(st.Sockets), b.String())
	fmt.Fprintf(w, "  fault: %s\n", faultString(bpf.Fault{DropEvery: st.Fault.DropEvery, DropRatio: st.Fault.DropRatio}))
}

func faultString(f bpf.Fault) string {
	var parts []string
	if f.DropEvery != 0 {
		parts = append(parts, fmt.Sprintf("drop every %d", f.DropEvery))
	}
	if f.DropRatio != 0 {
		parts = append(parts, fmt.Sprintf("drop ratio %.6g", f.DropRatio))
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ", ")
}
