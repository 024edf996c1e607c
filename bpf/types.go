package bpf

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
)

// Limits fixed by the map definitions in steer.c.
const (
	MaxQueues = 64   // entries of the XSKMAP: RX queues 0..MaxQueues-1
	MaxFlows  = 1024 // entries of the flows hash map
)

// Errors returned (wrapped) by this package; test with errors.Is.
var (
	// ErrNotSupported: the kernel or the interface cannot do what was
	// asked (no BPF permission, no native XDP on the interface, ...).
	ErrNotSupported = errors.New("not supported")
	// ErrNotFound: no such flow, socket or interface.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: an argument is out of range or malformed.
	ErrInvalid = errors.New("invalid argument")
	// ErrBusy: the interface already has an XDP program, or the Program is
	// already attached.
	ErrBusy = errors.New("busy")
	// ErrNotAttached: the Program is not attached to an interface.
	ErrNotAttached = errors.New("not attached")
	// ErrClosed: the Program has been closed.
	ErrClosed = errors.New("closed")
	// ErrStale: pins that no longer attach the program to the interface
	// they are named after (the interface is gone or was replaced, the
	// link was detached, or the pins are incomplete or of another layout).
	ErrStale = errors.New("stale pins")
	// ErrNoFS: the path is not on a mounted bpffs.
	ErrNoFS = errors.New("bpffs not mounted")
)

// Mode is how the XDP program is attached to an interface.
type Mode int

const (
	// ModeAuto tries native (driver) mode first and falls back to generic
	// mode when the interface has no native XDP support. Program.Mode
	// reports ModeAuto while the program is not attached.
	ModeAuto Mode = iota
	// ModeNative runs the program in the driver's receive path.
	ModeNative
	// ModeGeneric runs the program on the kernel's skb path (any device,
	// slower, AF_XDP copy mode only).
	ModeGeneric
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeNative:
		return "native"
	case ModeGeneric:
		return "generic"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Flow is a steered destination: an IPv4 unicast address or multicast
// group and a UDP destination port.
type Flow struct {
	Addr netip.Addr
	Port uint16
}

func (f Flow) String() string {
	return netip.AddrPortFrom(f.Addr, f.Port).String()
}

// validate reports whether f can be a key of the flows map.
func (f Flow) validate() error {
	switch {
	case !f.Addr.Is4():
		return fmt.Errorf("flow %v: address must be IPv4: %w", f, ErrInvalid)
	case f.Addr.IsUnspecified():
		return fmt.Errorf("flow %v: address 0.0.0.0 (no wildcards): %w", f, ErrInvalid)
	case f.Port == 0:
		return fmt.Errorf("flow %v: port 0: %w", f, ErrInvalid)
	}
	return nil
}

// Counters are the program's counters summed over all CPUs. Every packet
// the program ran on is Seen and then exactly one of Redirected, Passed or
// Dropped; NoSocket counts the steered packets that were passed because no
// AF_XDP socket was registered at their RX queue (a subset of Passed).
type Counters struct {
	Seen, Redirected, Passed, Dropped, NoSocket uint64
}

// Fault is loss injected into steered packets; the zero value is off.
// A packet is dropped when either rule says so.
type Fault struct {
	// DropEvery drops every Nth steered packet (0 = off). The sequence is
	// global over all CPUs and restarts at every SetFault.
	DropEvery uint32
	// DropRatio drops this random fraction of steered packets, 0..1
	// (0 = off). It is stored as a 32-bit fraction, so Fault returns it
	// rounded to a multiple of 1/(2^32-1).
	DropRatio float64
}

func (f Fault) validate() error {
	if math.IsNaN(f.DropRatio) || f.DropRatio < 0 || f.DropRatio > 1 {
		return fmt.Errorf("fault drop ratio %v not in [0, 1]: %w", f.DropRatio, ErrInvalid)
	}
	return nil
}

// ratioToFixed converts a ratio in [0, 1] to the map's fraction of 2^32-1.
func ratioToFixed(r float64) uint32 {
	return uint32(math.Round(r * math.MaxUint32))
}

func fixedToRatio(v uint32) float64 {
	return float64(v) / math.MaxUint32
}
