package replica_test

import (
	"strings"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/transport"
	"github.com/ringfire/ringfire/replica"
)

// The AF_XDP variants of the datagram modes. "xdp-multicast" and
// "xdp-unicast" carry datagrams over AF_XDP at both ends, the program
// attached in native mode; "xdpgen-*" the same in generic (skb) mode;
// "xdpsrc-*" has an AF_XDP source and kernel UDP mirrors, "xdpmir-*" the
// reverse. Every namespace of the tests names its interface veth0.
var (
	xdpModes     = []string{"xdp-multicast", "xdp-unicast"}
	genericModes = []string{"xdpgen-multicast", "xdpgen-unicast"}
	mixedModes   = []string{"xdpsrc-multicast", "xdpsrc-unicast", "xdpmir-multicast", "xdpmir-unicast"}
)

const testIface = "veth0"

// baseMode is the kernel mode a mode is a variant of ("xdp-unicast":
// "unicast").
func baseMode(mode string) string {
	for _, p := range []string{"xdp-", "xdpgen-", "xdpsrc-", "xdpmir-"} {
		if b, ok := strings.CutPrefix(mode, p); ok {
			return b
		}
	}
	return mode
}

// transportLabel is the mirror's Transport statistic in a datagram mode.
func transportLabel(mode string) string {
	if _, mir := xdpEnds(mode); mir {
		return "xdp " + baseMode(mode)
	}
	return "udp " + baseMode(mode)
}

// xdpSides applies the AF_XDP transports a mode asks for to the configs.
func xdpSides(mode string, scfg *replica.ServerConfig, mcfg *replica.MirrorConfig) {
	base := transport.XDPConfig{Iface: testIface, Mode: bpf.ModeNative}
	if strings.HasPrefix(mode, "xdpgen-") {
		base.Mode = bpf.ModeGeneric
	}
	src, mir := xdpEnds(mode)
	if src {
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			return newXDP(transport.ForServer(base, u))
		}
	}
	if mir {
		mcfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) {
			return newXDP(transport.ForMirror(base, s))
		}
	}
}

// xdpEnds says which ends of a mode use AF_XDP.
func xdpEnds(mode string) (src, mir bool) {
	both := strings.HasPrefix(mode, "xdp-") || strings.HasPrefix(mode, "xdpgen-")
	return both || strings.HasPrefix(mode, "xdpsrc-"), both || strings.HasPrefix(mode, "xdpmir-")
}

func newXDP(cfg transport.XDPConfig) (replica.Transport, error) {
	cfg.Socket.RingSize = 1024 // 4 MiB of UMEM per socket: many run at once
	t, err := transport.NewXDP(cfg)
	if err != nil {
		return nil, err // never fall back in a test: the mode says AF_XDP
	}
	return t, nil
}
