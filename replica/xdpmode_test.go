package replica_test

import (
	"strings"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// The kernel-bypass variants of the datagram modes, named PREFIX-BASE
// ("xdp-unicast": AF_XDP at both ends, unicast). "xdp-*" carries datagrams
// over AF_XDP at both ends, the program attached in native mode;
// "xdpgen-*" the same in generic (skb) mode; "xdpsrc-*" has an AF_XDP
// source and kernel UDP mirrors, "xdpmir-*" the reverse. "pkt-*" carries
// them over AF_PACKET rings at both ends; "pktsrc-*" and "pktmir-*" mix
// AF_PACKET with kernel UDP, "pktxdp-*" (AF_PACKET source, AF_XDP mirror)
// and "xdppkt-*" (the reverse) with AF_XDP. Every namespace of the tests
// names its interface veth0.
var (
	xdpModes      = []string{"xdp-multicast", "xdp-unicast"}
	genericModes  = []string{"xdpgen-multicast", "xdpgen-unicast"}
	mixedModes    = []string{"xdpsrc-multicast", "xdpsrc-unicast", "xdpmir-multicast", "xdpmir-unicast"}
	pktModes      = []string{"pkt-multicast", "pkt-unicast"}
	pktMixedModes = []string{"pktsrc-multicast", "pktsrc-unicast", "pktmir-multicast", "pktmir-unicast",
		"pktxdp-multicast", "pktxdp-unicast", "xdppkt-multicast", "xdppkt-unicast"}
)

const testIface = "veth0"

// modeEnds are the transports of a mode's source and mirror ("udp", "xdp",
// "afpacket"), by its prefix.
var modeEnds = map[string][2]string{
	"xdp": {"xdp", "xdp"}, "xdpgen": {"xdp", "xdp"}, "xdpsrc": {"xdp", "udp"}, "xdpmir": {"udp", "xdp"},
	"pkt": {"afpacket", "afpacket"}, "pktsrc": {"afpacket", "udp"}, "pktmir": {"udp", "afpacket"},
	"pktxdp": {"afpacket", "xdp"}, "xdppkt": {"xdp", "afpacket"},
}

// ends returns the transports of mode's source and mirror, and its kernel
// mode ("xdp-unicast": xdp, xdp, "unicast").
func ends(mode string) (src, mir, base string) {
	if prefix, b, ok := strings.Cut(mode, "-"); ok {
		if e, ok := modeEnds[prefix]; ok {
			return e[0], e[1], b
		}
	}
	return "udp", "udp", mode
}

// baseMode is the kernel mode a mode is a variant of ("xdp-unicast":
// "unicast").
func baseMode(mode string) string {
	_, _, b := ends(mode)
	return b
}

// transportLabel is the mirror's Transport statistic in a datagram mode.
func transportLabel(mode string) string {
	_, mir, b := ends(mode)
	return mir + " " + b
}

// xdpSides applies the kernel-bypass transports a mode asks for to the
// configs.
func xdpSides(mode string, scfg *replica.ServerConfig, mcfg *replica.MirrorConfig) {
	base := transport.XDPConfig{Iface: testIface, Mode: bpf.ModeNative}
	if strings.HasPrefix(mode, "xdpgen-") {
		base.Mode = bpf.ModeGeneric
	}
	pbase := transport.AFPacketConfig{Iface: testIface}
	src, mir, _ := ends(mode)
	switch src {
	case "xdp":
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			return newXDP(transport.XDPForServer(base, u))
		}
	case "afpacket":
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			return newPacket(transport.AFPacketForServer(pbase, u))
		}
	}
	switch mir {
	case "xdp":
		mcfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) {
			return newXDP(transport.XDPForMirror(base, s))
		}
	case "afpacket":
		mcfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) {
			return newPacket(transport.AFPacketForMirror(pbase, s))
		}
	}
}

func newXDP(cfg transport.XDPConfig) (replica.Transport, error) {
	cfg.Socket.RingSize = 1024 // 4 MiB of UMEM per socket: many run at once
	t, err := transport.NewXDP(cfg)
	if err != nil {
		return nil, err // never fall back in a test: the mode says AF_XDP
	}
	return t, nil
}

func newPacket(cfg transport.AFPacketConfig) (replica.Transport, error) {
	t, err := transport.NewAFPacket(cfg) // default rings: 4 MiB RX, 1 MiB TX
	if err != nil {
		return nil, err // never fall back in a test: the mode says AF_PACKET
	}
	return t, nil
}
