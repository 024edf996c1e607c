package proc

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

	"github.com/ringfire/ringfire/internal/netns"
)

// Listening reports whether a TCP socket listens on ap in ns, from the
// namespace's /proc/thread-self/net/tcp.
func Listening(ns *netns.NS, ap netip.AddrPort) (bool, error) {
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

// FindRingfire is the ringfire binary: path when given, else a ringfire
// next to this binary (bin/), else one built into a temporary directory
// (which the caller removes).
func FindRingfire(path, self string) (bin, built string, err error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", "", fmt.Errorf("--ringfire: %w", err)
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
		return "", "", fmt.Errorf("building ringfire (or pass --ringfire PATH): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, dir, nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
