package replica_test

import (
	"strings"

	"github.com/ringfire/ringfire/internal/transport"
	"github.com/ringfire/ringfire/replica"
)

// The AF_XDP variants of the datagram modes. "xdp-multicast" and
// "xdp-unicast" carry datagrams over AF_XDP at both ends; "xdpsrc-*" has an
// AF_XDP source and kernel UDP mirrors, "xdpmir-*" the reverse. Every
// namespace of the tests names its interface veth0.
var (
	xdpModes   = []string{"xdp-multicast", "xdp-unicast"}
	mixedModes = []string{"xdpsrc-multicast", "xdpsrc-unicast", "xdpmir-multicast", "xdpmir-unicast"}
)

const testIface = "veth0"

// baseMode is the kernel mode a mode is a variant of ("xdp-unicast":
// "unicast").
func baseMode(mode string) string {
	for _, p := range []string{"xdp-", "xdpsrc-", "xdpmir-"} {
		if b, ok := strings.CutPrefix(mode, p); ok {
			return b
		}
	}
	return mode
}

// transportLabel is the mirror's Transport statistic in a datagram mode.
func transportLabel(mode string) string {
	if strings.HasPrefix(mode, "xdp-") || strings.HasPrefix(mode, "xdpmir-") {
		return "xdp " + baseMode(mode)
	}
	return "udp " + baseMode(mode)
}

// xdpSides applies the AF_XDP transports a mode asks for to the configs.
func xdpSides(mode string, scfg *replica.ServerConfig, mcfg *replica.MirrorConfig) {
	src := strings.HasPrefix(mode, "xdp-") || strings.HasPrefix(mode, "xdpsrc-")
	mir := strings.HasPrefix(mode, "xdp-") || strings.HasPrefix(mode, "xdpmir-")
	if src {
		scfg.NewTransport = xdpServer
	}
	if mir {
		mcfg.NewTransport = xdpMirror
	}
}

// xdpServer opens a server's AF_XDP transport (in the caller's namespace).
func xdpServer(u replica.UDPConfig) (replica.Transport, error) {
	return newXDP(transport.ForServer(transport.XDPConfig{Iface: testIface}, u))
}

// xdpMirror opens a mirror's AF_XDP transport.
func xdpMirror(s replica.DatagramSpec) (replica.Transport, error) {
	return newXDP(transport.ForMirror(transport.XDPConfig{Iface: testIface}, s))
}

func newXDP(cfg transport.XDPConfig) (replica.Transport, error) {
	cfg.Socket.RingSize = 1024 // 4 MiB of UMEM per socket: many run at once
	t, err := transport.NewXDP(cfg)
	if err != nil {
		return nil, err // never fall back in a test: the mode says AF_XDP
	}
	return t, nil
}
