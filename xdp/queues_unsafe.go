package xdp

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	cmd                                         uint32
	maxRX, maxTX, maxOther, maxCombined         uint32
	rxCount, txCount, otherCount, combinedCount uint32
}

// ifreqData is struct ifreq with its union holding a pointer.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// Queues returns how many queues of the interface ifname an AF_XDP socket
// can bind to: the active channels (ETHTOOL_GCHANNELS), combined plus
// receive-only, or 1 for a driver that does not report channels. It runs
// in the calling thread's network namespace.
func Queues(ifname string) (int, error) {
	if len(ifname) >= unix.IFNAMSIZ {
		return 0, fmt.Errorf("xdp: interface name %q too long", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	ch := ethtoolChannels{cmd: unix.ETHTOOL_GCHANNELS}
	req := ifreqData{data: unsafe.Pointer(&ch)}
	copy(req.name[:], ifname)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
	switch {
	case e == 0:
	case errors.Is(e, unix.EOPNOTSUPP):
		return 1, nil
	default:
		return 0, fmt.Errorf("xdp: channels of %s: %w", ifname, os.NewSyscallError("ioctl SIOCETHTOOL", e))
	}
	return max(int(ch.combinedCount+ch.rxCount), 1), nil
}
