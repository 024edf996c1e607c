package neigh

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/pkt"
)

// neighbour returns the MAC of ip on link, making the kernel resolve it when
// the neighbour table has no usable entry.
func (r *Resolver) neighbour(ctx context.Context, link Link, ip netip.Addr) (pkt.MAC, error) {
	mac, ok, err := r.lookup(link.Index, ip)
	if err != nil || ok {
		return mac, err
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var sent time.Time
	for {
		if time.Since(sent) >= retrigger {
			if err := r.trigger(link.Index, ip); err != nil {
				return pkt.MAC{}, err
			}
			sent = time.Now()
		}
		select {
		case <-ctx.Done():
			return pkt.MAC{}, fmt.Errorf("neigh: %v on %s: %w (%w)", ip, link.Name, ErrUnresolved, ctx.Err())
		case <-tick.C:
		}
		if mac, ok, err = r.lookup(link.Index, ip); err != nil || ok {
			return mac, err
		}
	}
}

// lookup reads ip's entry on link from the neighbour table; ok is false
// when there is no entry in a usable state.
func (r *Resolver) lookup(linkIndex int, ip netip.Addr) (mac pkt.MAC, ok bool, err error) {
	ns, err := retryDump("list neighbours", func() ([]netlink.Neigh, error) {
		return r.h.NeighList(linkIndex, netlink.FAMILY_V4)
	})
	if err != nil {
		return pkt.MAC{}, false, err
	}
	for _, n := range ns {
		a, aok := netip.AddrFromSlice(n.IP)
		if n.LinkIndex != linkIndex || !aok || a.Unmap() != ip {
			continue
		}
		if n.State&usable == 0 || len(n.HardwareAddr) != len(mac) {
			return pkt.MAC{}, false, nil
		}
		copy(mac[:], n.HardwareAddr)
		return mac, true, nil
	}
	return pkt.MAC{}, false, nil
}

// trigger sends one empty UDP datagram from a kernel socket on the link to
// ip's discard port; routing it makes the kernel start ARP for ip.
func (r *Resolver) trigger(linkIndex int, ip netip.Addr) error {
	r.trigMu.Lock()
	defer r.trigMu.Unlock()
	fd := r.trig
	if fd < 0 {
		var err error
		if fd, err = triggerSocket(); err != nil {
			return fmt.Errorf("neigh: trigger ARP for %v: %w", ip, err)
		}
		defer unix.Close(fd)
	}
	// Best effort: pin the datagram to the link (may need CAP_NET_RAW on
	// old kernels); routing to ip normally picks the same link anyway.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BINDTOIFINDEX, linkIndex)
	err := unix.Sendto(fd, nil, 0, &unix.SockaddrInet4{Port: discardPort, Addr: ip.As4()})
	switch {
	case err == nil, errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EHOSTUNREACH),
		errors.Is(err, unix.ENOBUFS):
		// Sent, or queued behind a resolution already in progress, or the
		// entry is FAILED right now: keep polling.
		return nil
	default:
		return fmt.Errorf("neigh: trigger ARP for %v: %w", ip, os.NewSyscallError("sendto", err))
	}
}
