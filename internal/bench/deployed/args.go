package deployed

import (
	"net/netip"
	"strconv"
	"strings"
)

// WaitArgs are the serve and mirror flags of a wait mode: none for
// "default", --spin for "spin", --wait NAME for any other name.
func WaitArgs(wait string) []string {
	switch wait {
	case "default":
		return nil
	case "spin":
		return []string{"--spin"}
	}
	return []string{"--wait", wait}
}

// transportArgs are the flags both ends of a hop take for AF_XDP: the
// link's interface, and no silent fallback to kernel UDP.
func transportArgs(tr string, h hop) []string {
	if strings.HasPrefix(tr, "xdp-") {
		return []string{"--xdp", h.ifname, "--require-xdp"}
	}
	return nil
}

func Multicast(tr string) bool { return strings.HasSuffix(tr, "-multicast") }

// serveArgs is the ringfire serve command line of hop h.
func serveArgs(ringfire string, h hop, tr, wait string) []string {
	args := []string{ringfire, "serve", h.ring, "--bind", h.bind().String(), "--iface", h.src.String()}
	if Multicast(tr) {
		g := netip.AddrPortFrom(netip.AddrFrom4([4]byte{239, 255, 7, byte(1 + h.dir)}), uint16(7501+2*h.dir))
		args = append(args, "--multicast", g.String())
	} else {
		args = append(args, "--udp", strconv.Itoa(7601+2*h.dir))
	}
	args = append(args, transportArgs(tr, h)...)
	return append(args, WaitArgs(wait)...)
}

// mirrorArgs is the ringfire mirror command line of hop h.
func mirrorArgs(ringfire string, h hop, tr, wait string) []string {
	args := []string{ringfire, "mirror", h.bind().String(), h.copy, "--from", "oldest",
		"--iface", h.dst.String(), "--reconnect-ms", "50"}
	if !Multicast(tr) {
		args = append(args, "--unicast")
	}
	args = append(args, transportArgs(tr, h)...)
	return append(args, WaitArgs(wait)...)
}
