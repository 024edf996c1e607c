package neigh

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	ErrNoLink     = errors.New("neigh: no such interface")
	ErrNotIPv4    = errors.New("neigh: not an IPv4 address")
	ErrNoRoute    = errors.New("neigh: no usable route")
	ErrUnresolved = errors.New("neigh: next hop did not resolve")
	ErrNetlink    = errors.New("neigh: netlink request failed")
)

// dumpRetries bounds retries of netlink dumps interrupted by concurrent
// changes (NLM_F_DUMP_INTR).
const dumpRetries = 5

// retryDump runs a netlink dump, retrying when it was interrupted.
func retryDump[T any](what string, fn func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for range dumpRetries {
		if v, err = fn(); !isInterrupted(err) {
			break
		}
	}
	if err != nil {
		return v, fmt.Errorf("neigh: %s: %w: %w", what, ErrNetlink, err)
	}
	return v, nil
}

// errNoDevice is what the kernel answers for a missing link.
var errNoDevice = unix.ENODEV

// isInterrupted reports whether a netlink dump was interrupted by a
// concurrent change and should be retried.
func isInterrupted(err error) bool { return errors.Is(err, netlink.ErrDumpInterrupted) }
