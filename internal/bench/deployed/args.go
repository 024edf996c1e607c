package deployed

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
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

// listening reports whether a TCP socket listens on ap in ns, from the
// namespace's /proc/thread-self/net/tcp.
func listening(ns *netns.NS, ap netip.AddrPort) (bool, error) {
	ip := ap.Addr().As4()
	want := fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip[:]), ap.Port())
	var found bool
	err := ns.Do(func() error {
		f, err := os.Open("/proc/thread-self/net/tcp")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ...; st 0A is LISTEN
			if fs := strings.Fields(sc.Text()); len(fs) > 3 && fs[1] == want && fs[3] == "0A" {
				found = true
			}
		}
		return sc.Err()
	})
	return found, err
}

// buildWait bounds building the ringfire binary.
const buildWait = 5 * time.Minute

// findRingfire is the ringfire binary: path when given, else a ringfire
// next to this binary (bin/), else one built into a temporary directory
// (which the caller removes).
func findRingfire(path, self string) (bin, built string, err error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", "", fmt.Errorf("deployed: --ringfire: %w", err)
		}
		return path, "", nil
	}
	if next := filepath.Join(filepath.Dir(self), "ringfire"); isExecutable(next) {
		return next, "", nil
	}
	dir, err := os.MkdirTemp("", "ringfire-bench-bin-")
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "ringfire")
	ctx, cancel := context.WithTimeout(context.Background(), buildWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/ringfire/ringfire/cmd/ringfire").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("deployed: building ringfire (or pass --ringfire PATH): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, dir, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
