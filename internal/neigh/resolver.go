package neigh

import (
	"fmt"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Resolver answers in the network namespace it was created in, whatever
// thread calls it later: its netlink socket and the socket that triggers
// ARP are opened by NewResolver. Goroutines of a process that entered a
// namespace on one thread only (tests, tools) need that; the package-level
// functions use the namespace of the calling thread. A Resolver is safe for
// concurrent use.
type Resolver struct {
	h      *netlink.Handle
	trigMu sync.Mutex
	trig   int // UDP socket for ARP triggers; -1: open one per trigger
}

// current resolves in the calling thread's namespace: a zero netlink
// handle opens a socket per request.
var current = &Resolver{h: &netlink.Handle{}, trig: -1}

// NewResolver opens a resolver in the calling thread's namespace.
func NewResolver() (*Resolver, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("neigh: netlink: %w: %w", ErrNetlink, err)
	}
	fd, err := triggerSocket()
	if err != nil {
		h.Close()
		return nil, err
	}
	return &Resolver{h: h, trig: fd}, nil
}

func triggerSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	return fd, nil
}

// Close releases the resolver's sockets.
func (r *Resolver) Close() error {
	if r == current {
		return nil
	}
	r.h.Close()
	r.trigMu.Lock()
	defer r.trigMu.Unlock()
	if r.trig < 0 {
		return nil
	}
	err := unix.Close(r.trig)
	r.trig = -1
	return os.NewSyscallError("close", err)
}
