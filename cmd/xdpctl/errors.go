package main

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/bpf"
)

// Errors of xdpctl; every one is wrapped with what to do about it.
var (
	errNoIface      = errors.New("no interface")
	errNotAttached  = errors.New("no steering program pinned")
	errBusy         = errors.New("interface busy")
	errPrivateMount = errors.New("private mount namespace")
	errInUse        = errors.New("program in use")
)

const rootHint = "run as root or with CAP_BPF and CAP_NET_ADMIN"

// permHint adds the root hint to a permission error.
func permHint(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (%s)", err, rootHint)
	}
	return err
}

// fsHint explains a bpffs that is missing and could not be mounted.
func fsHint(err error, dir string) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return permHint(err)
	}
	if errors.Is(err, bpf.ErrNoFS) {
		return fmt.Errorf("%w (mount it with `mount -t bpf bpf %s`, or pass --bpffs with a bpffs mount)", err, dir)
	}
	return err
}

// attachHint explains why attaching to ifname failed.
func attachHint(err error, ifname string, mode bpf.Mode) error {
	switch {
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		return permHint(err)
	case errors.Is(err, bpf.ErrBusy):
		return fmt.Errorf("%w: %w (see `xdpctl status %s`; a program xdpctl did not pin must be removed by its owner, e.g. `ip link set dev %s xdp off`)", errBusy, err, ifname, ifname)
	case errors.Is(err, bpf.ErrNotSupported) && mode == bpf.ModeNative:
		return fmt.Errorf("%w (the driver of %s has no native XDP: use --mode generic, or --mode auto)", err, ifname)
	case errors.Is(err, bpf.ErrNotFound):
		return fmt.Errorf("%w: %w", errNoIface, err)
	}
	return err
}

// openHint explains why the pinned program of ifname cannot be opened.
func openHint(err error, ifname string, c *common) error {
	switch {
	case errors.Is(err, bpf.ErrNotFound) && !bpf.IsFS(c.bpffs):
		return fmt.Errorf("%w for %s: %s", errNotAttached, ifname, noFS(c))
	case errors.Is(err, bpf.ErrNotFound):
		return fmt.Errorf("%w for %s in this network namespace (attach one with `xdpctl attach %s`; --netns NAME for another namespace)", errNotAttached, ifname, ifname)
	case errors.Is(err, bpf.ErrStale):
		return fmt.Errorf("%w (`xdpctl detach %s` removes the stale pins)", err, ifname)
	}
	return permHint(err)
}

// noFS explains that no pins can be seen because bpffs is not mounted.
func noFS(c *common) string {
	return fmt.Sprintf("no bpffs at %s in this mount namespace, so no pins are visible (under `ip netns exec`, run `xdpctl --netns NAME ...` from the host instead)", c.bpffs)
}
