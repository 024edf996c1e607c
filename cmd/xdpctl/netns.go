package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// do runs fn in the namespace --netns names, or in the calling thread's
// when it names none. Everything that depends on the namespace (netlink,
// ifindexes, ioctls, attaching, AF_XDP sockets) happens synchronously in
// fn, on one locked thread; only the network namespace changes, so the
// pins stay in this process's mount namespace.
func (c *common) do(fn func() error) error {
	if c.netns == "" {
		return fn()
	}
	path := c.netns
	if !strings.ContainsRune(path, '/') {
		path = "/run/netns/" + path
	}
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("network namespace %q: %w (see `ip netns list`)", c.netns, err)
	}
	defer unix.Close(target)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w (run as root or with CAP_SYS_ADMIN)", err)
			}
			done <- fmt.Errorf("enter network namespace %q: %w", c.netns, err)
			return
		}
		err = fn()
		if serr := unix.Setns(orig, unix.CLONE_NEWNET); serr != nil {
			done <- errors.Join(err, serr) // stays locked: the thread dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// privateMounts reports whether this process has a mount namespace of its
// own (as under `ip netns exec` or `unshare -m`): a bpffs it mounts there,
// and the pins in it, vanish when the process exits. It compares with
// PID 1's namespace when that can be read, and with the parent's.
func privateMounts() bool {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return false
	}
	for _, other := range []string{"/proc/1/ns/mnt", fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid())} {
		if ns, err := os.Readlink(other); err == nil && ns != self {
			return true
		}
	}
	return false
}

// linkByName looks ifname up in the calling thread's namespace.
func linkByName(ifname string) (netlink.Link, error) {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("%w %q in this network namespace (see `ip link`; --netns NAME works in another)", errNoIface, ifname)
		}
		return nil, fmt.Errorf("interface %q: %w", ifname, permHint(err))
	}
	return l, nil
}

// attached describes the XDP program netlink reports on l, if any.
type attached struct {
	ProgID int    `json:"prog_id"`
	Mode   string `json:"mode"` // native, generic, offload, multi
}

func xdpOf(l netlink.Link) *attached {
	x := l.Attrs().Xdp
	if x == nil || !x.Attached {
		return nil
	}
	mode := map[uint32]string{1: "native", 2: "generic", 3: "offload", 4: "multi"}[x.AttachMode]
	if mode == "" {
		mode = fmt.Sprintf("mode %d", x.AttachMode)
	}
	return &attached{ProgID: int(x.ProgId), Mode: mode}
}
