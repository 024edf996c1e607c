package archive

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/netns"
)

// The catch-up's ringfire processes: serve in namespace A, mirror in
// namespace B, across the run's veth pair.

// CatchupTransports are the live paths the catch-up takes: everything
// over TCP, or datagrams by AF_XDP unicast (the deployed section's) with
// the history over TCP.
var CatchupTransports = []string{"xdp-unicast", "tcp"}

// catchupPort is serve's TCP port; catchupUDP its unicast port.
const (
	catchupPort = 7470
	catchupUDP  = 7671
)

// network makes the catch-up's second launcher (namespace B) and finds
// the ringfire binary, once.
func (b *Bench) network() error {
	if b.pair == nil {
		return fmt.Errorf("archive: catch-up: no network namespace pair")
	}
	if b.ringfire == "" {
		bin, built, err := findRingfire(b.cfg.Ringfire, b.self)
		if err != nil {
			return err
		}
		b.ringfire, b.built = bin, built
	}
	if b.lb == nil {
		b.lb = proc.NewLauncher(b.pair.B)
	}
	return nil
}

// startRingfire starts a ringfire process (argv after the binary) from l.
func (ps *procs) startRingfire(l *proc.Launcher, name string, args []string) (*proc.Proc, error) {
	p, err := proc.Start(l, name, args, nil, false)
	if err != nil {
		return nil, err
	}
	*ps = append(*ps, p)
	return p, nil
}

func (b *Bench) bind() netip.AddrPort { return netip.AddrPortFrom(b.pair.AAddr, catchupPort) }

// startServe starts ringfire serve of ring with its archive in namespace
// A, the repair budget off, and waits until it listens.
func (b *Bench) startServe(ps *procs, ring, arch string) (*proc.Proc, error) {
	args := []string{b.ringfire, "serve", ring, "--archive", arch, "--bind", b.bind().String(), "--iface", b.pair.AAddr.String(),
		"--repair-rate", "off", "--repair-addr-rate", "off"}
	if b.cfg.CatchupTransport == "xdp-unicast" {
		args = append(args, "--udp", fmt.Sprint(catchupUDP), "--xdp", b.pair.AIf, "--require-xdp")
	}
	p, err := ps.startRingfire(b.l, "serve", args)
	if err != nil {
		return nil, err
	}
	var lerr error
	err = pace.Until(readyWait, "serve to listen", func() bool {
		ok, err := listening(b.pair.A, b.bind())
		if lerr = err; err == nil {
			lerr = p.Alive()
		}
		return ok || lerr != nil
	})
	if lerr != nil {
		return nil, lerr
	}
	return p, err
}

// mirrorArgs is the ringfire mirror command line, from sequence 1.
func (b *Bench) mirrorArgs(ring string) []string {
	args := []string{b.ringfire, "mirror", b.bind().String(), ring, "--from", "1", "--iface", b.pair.BAddr.String(),
		"--reconnect-ms", "50", "--json"}
	if b.cfg.CatchupTransport == "xdp-unicast" {
		return append(args, "--unicast", "--xdp", b.pair.BIf, "--require-xdp")
	}
	return append(args, "--tcp")
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
// (which Close removes).
func findRingfire(path, self string) (bin, built string, err error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", "", fmt.Errorf("archive: --ringfire: %w", err)
		}
		return path, "", nil
	}
	if next := filepath.Join(filepath.Dir(self), "ringfire"); executable(next) {
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
		return "", "", fmt.Errorf("archive: building ringfire (or pass --ringfire PATH): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, dir, nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
