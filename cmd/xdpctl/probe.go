package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/xdp"
)

// probeResult is what probe reports. The support fields read "yes", "no:
// reason" or "unknown: reason".
type probeResult struct {
	Iface    string    `json:"iface"`
	Index    int       `json:"index"`
	Driver   string    `json:"driver"`
	Version  string    `json:"driver_version,omitempty"`
	Firmware string    `json:"firmware,omitempty"`
	Bus      string    `json:"bus_info,omitempty"`
	MTU      int       `json:"mtu"`
	Queues   int       `json:"queues"`
	XDP      *attached `json:"xdp,omitempty"` // the program attached now
	Native   string    `json:"native_xdp"`
	Generic  string    `json:"generic_xdp"`
	ZeroCopy string    `json:"af_xdp_zero_copy"`
}

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c       common
		asJSON  bool
		passive bool
	)
	fs := newFlagSet("probe", "IFACE [--json] [--passive]",
		"Report IFACE's driver, queues (combined channels), MTU, the XDP program\n"+
			"attached to it, and whether it takes XDP in native and generic mode and\n"+
			"AF_XDP sockets in zero-copy mode. Support is found by trying: the\n"+
			"steering program is attached briefly in each mode (only when no program\n"+
			"is attached) and a zero-copy socket is bound to queue 0. Some drivers\n"+
			"reset their rings for that (a short traffic hiccup): --passive skips it.", stderr, &c)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.BoolVar(&passive, "passive", false, "do not try attaching or binding")
	pos, err := parseArgs(fs, args, 1, "IFACE")
	if err != nil {
		return helpOr(err)
	}
	return c.do(func() error {
		r, err := probe(pos[0], passive)
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}
		printProbe(stdout, r)
		return nil
	})
}

func probe(ifname string, passive bool) (probeResult, error) {
	l, err := linkByName(ifname)
	if err != nil {
		return probeResult{}, err
	}
	a := l.Attrs()
	r := probeResult{Iface: ifname, Index: a.Index, MTU: a.MTU, XDP: xdpOf(l)}
	if err := driverInfo(&r); err != nil {
		return r, err
	}
	if r.Queues, err = xdp.Queues(ifname); err != nil {
		return r, permHint(err)
	}
	switch {
	case passive:
		r.Native, r.Generic, r.ZeroCopy = "unknown: not tried (--passive)", "unknown: not tried (--passive)", "unknown: not tried (--passive)"
		return r, nil
	case r.XDP != nil:
		why := fmt.Sprintf("unknown: not tried, program id %d is attached", r.XDP.ProgID)
		r.Native, r.Generic = why, why
		if r.XDP.Mode == "native" {
			r.Native = "yes (a program is attached in native mode)"
		}
		if r.XDP.Mode == "generic" {
			r.Generic = "yes (a program is attached in generic mode)"
		}
	default:
		r.Native, r.Generic = tryAttach(a.Index)
	}
	r.ZeroCopy = tryZeroCopy(a.Index)
	return r, nil
}

// driverInfo fills in the driver with ETHTOOL_GDRVINFO.
func driverInfo(r *probeResult) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, r.Iface)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			r.Driver = "unknown (no ethtool driver info)"
			return nil
		}
		return fmt.Errorf("driver of %s: %w", r.Iface, permHint(os.NewSyscallError("ioctl ETHTOOL_GDRVINFO", err)))
	}
	r.Driver, r.Version = unix.ByteSliceToString(info.Driver[:]), unix.ByteSliceToString(info.Version[:])
	r.Firmware, r.Bus = unix.ByteSliceToString(info.Fw_version[:]), unix.ByteSliceToString(info.Bus_info[:])
	return nil
}

// tryAttach attaches the steering program in native, then generic mode,
// detaching it each time.
func tryAttach(index int) (native, generic string) {
	p, err := bpf.Load()
	if err != nil {
		why := "unknown: " + permHint(err).Error()
		return why, why
	}
	defer p.Close()
	try := func(m bpf.Mode) string {
		err := p.Attach(index, m)
		switch {
		case err == nil:
			if err := p.Detach(); err != nil {
				return "yes (detach: " + err.Error() + ")"
			}
			return "yes"
		case errors.Is(err, unix.EOPNOTSUPP):
			return "no: " + err.Error()
		}
		return "unknown: " + permHint(err).Error()
	}
	return try(bpf.ModeNative), try(bpf.ModeGeneric)
}

// tryZeroCopy binds a zero-copy AF_XDP socket to queue 0 (no program
// needed) and closes it.
func tryZeroCopy(index int) string {
	s, err := xdp.Open(index, 0, xdp.Config{RingSize: 64, Bind: xdp.BindZeroCopy, BindRetry: 100 * time.Millisecond})
	switch {
	case err == nil:
		s.Close()
		return "yes"
	case errors.Is(err, xdp.ErrBusy):
		return "unknown: queue 0 is held by another AF_XDP socket"
	case errors.Is(err, xdp.ErrNotSupported):
		return "no: " + err.Error()
	}
	return "unknown: " + permHint(err).Error()
}

func printProbe(w io.Writer, r probeResult) {
	drv := r.Driver
	if r.Version != "" {
		drv += " " + r.Version
	}
	if r.Bus != "" {
		drv += " (bus " + r.Bus + ")"
	}
	if r.Firmware != "" && r.Firmware != "N/A" {
		drv += ", firmware " + r.Firmware
	}
	cur := "none"
	if r.XDP != nil {
		cur = fmt.Sprintf("program id %d in %s mode", r.XDP.ProgID, r.XDP.Mode)
	}
	fmt.Fprintf(w, "interface   %s (index %d)\ndriver      %s\nmtu         %d\nqueues      %d\nattached    %s\nnative xdp  %s\ngeneric xdp %s\nzero-copy   %s\n",
		r.Iface, r.Index, drv, r.MTU, r.Queues, cur, r.Native, r.Generic, r.ZeroCopy)
}
