package transport

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/caps"
	"github.com/ringfire/ringfire/xdp"
)

// Errors of the package. A transport that cannot be opened here wraps
// ErrXDPUnavailable or ErrAFPacketUnavailable; Config falls back to kernel
// UDP on them unless told not to.
var (
	// ErrXDPUnavailable wraps every reason the AF_XDP path cannot be used
	// here (NewXDP).
	ErrXDPUnavailable = errors.New("transport: AF_XDP cannot be used")
	// ErrAFPacketUnavailable wraps every reason the AF_PACKET path cannot
	// be used here (NewAFPacket).
	ErrAFPacketUnavailable = errors.New("transport: AF_PACKET cannot be used")
	// ErrKind: a Kind (or its name) that is none of udp, xdp, afpacket, auto.
	ErrKind = errors.New("transport: unknown kind")
	// ErrNoBypass wraps the reasons no kernel-bypass transport could be
	// opened when Config.Require forbids falling back to kernel UDP.
	ErrNoBypass = errors.New("transport: no kernel-bypass transport could be used")
)

// unavailable wraps err, why the kernel-bypass transport kind could not
// be opened on iface, in sentinel. When the kernel refused for want of
// privilege (denied) and the process lacks some of the capabilities the
// transport needs, the reason starts with them by name (a
// *caps.MissingError, matching caps.ErrMissing): "AF_XDP on eth1 needs
// CAP_BPF; running with CAP_NET_RAW, CAP_NET_ADMIN".
func unavailable(sentinel error, kind Kind, iface string, denied bool, need []caps.Cap, err error) error {
	if denied {
		if m := caps.CheckCurrent(kind.Label()+" on "+iface, need...); errors.Is(m, caps.ErrMissing) {
			return fmt.Errorf("%w: %w: %w", sentinel, m, err)
		}
	}
	return fmt.Errorf("%w on %s: %w", sentinel, iface, err)
}

// denied reports whether the kernel refused err for want of privilege.
func denied(err error) bool { return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) }

// xdpCaps are the capabilities AF_XDP needs (the evidence is in package
// caps): the socket, the maps, the program and its verification, the
// attachment. CAP_IPC_LOCK is needed too where RLIMIT_MEMLOCK does not
// cover the UMEMs (xdpUnavailable).
var xdpCaps = []caps.Cap{caps.NetRaw, caps.NetAdmin, caps.BPF, caps.PerfMon}

// xdpUnavailable is why NewXDP failed with cfg, wrapped in
// ErrXDPUnavailable, naming the missing capabilities when the kernel
// refused for want of them.
func xdpUnavailable(cfg XDPConfig, err error) error {
	umem := umemRefused(err)
	if !umem && !denied(err) {
		return unavailable(ErrXDPUnavailable, KindXDP, cfg.Iface, false, nil, err)
	}
	need := xdpCaps
	if umem || !umemCovered(cfg) {
		need = append(slices.Clip(need), caps.IPCLock)
	}
	return unavailable(ErrXDPUnavailable, KindXDP, cfg.Iface, true, need, err)
}

// umemRefused reports whether err is the kernel refusing to pin a UMEM
// for want of CAP_IPC_LOCK (xdp.ErrUMEMLocked).
func umemRefused(err error) bool { return errors.Is(err, xdp.ErrUMEMLocked) }

// umemCovered reports whether RLIMIT_MEMLOCK covers the UMEMs of cfg on
// its interface, one per queue.
func umemCovered(cfg XDPConfig) bool {
	queues, err := xdp.Queues(cfg.Iface)
	if err != nil {
		queues = 1
	}
	ok, err := caps.MemlockCovers(uint64(queues * cfg.Socket.UMEMBytes()))
	return ok && err == nil
}

// afpacketCaps are the capabilities AF_PACKET needs: the socket.
var afpacketCaps = []caps.Cap{caps.NetRaw}

// afpacketUnavailable is why NewAFPacket failed on iface, wrapped in
// ErrAFPacketUnavailable, naming CAP_NET_RAW when it is missing.
func afpacketUnavailable(iface string, err error) error {
	return unavailable(ErrAFPacketUnavailable, KindAFPacket, iface, denied(err), afpacketCaps, err)
}
