package systemd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// units are the unit files, and the name each is verified as (a template
// needs an instance).
var units = []struct{ file, as string }{
	{"ringfire.service", "ringfire.service"},
	{"ringfire@.service", "ringfire@example.service"},
}

// minimalCaps is the capability set the units grant: what AF_XDP needs
// (cmd/ringfire's TestXDPEachCapabilityNeeded shows each is needed).
const minimalCaps = "CAP_NET_RAW CAP_NET_ADMIN CAP_BPF CAP_PERFMON CAP_IPC_LOCK"

// The units say what the service needs and how it is confined.
func TestUnitSettings(t *testing.T) {
	for _, u := range units {
		b, err := os.ReadFile(u.file)
		if err != nil {
			t.Fatal(err)
		}
		config := "/etc/ringfire/ringfire.toml"
		if strings.Contains(u.file, "@") {
			config = "/etc/ringfire/%i.toml"
		}
		settings := settingsOf(string(b))
		for key, want := range map[string]string{
			"ExecStart":               "/usr/local/bin/ringfire run " + config,
			"ExecReload":              "/bin/kill -HUP $MAINPID",
			"KillSignal":              "SIGTERM",
			"Restart":                 "on-failure",
			"User":                    "ringfire",
			"Group":                   "ringfire",
			"UMask":                   "0007",
			"AmbientCapabilities":     minimalCaps,
			"CapabilityBoundingSet":   minimalCaps,
			"NoNewPrivileges":         "yes",
			"ProtectSystem":           "strict",
			"ReadWritePaths":          "/dev/shm",
			"ProtectHome":             "yes",
			"PrivateTmp":              "yes",
			"RestrictAddressFamilies": "AF_INET AF_UNIX AF_NETLINK AF_XDP AF_PACKET",
		} {
			if got := settings[key]; got != want {
				t.Errorf("%s: %s=%q, want %q", u.file, key, got, want)
			}
		}
		if _, ok := settings["DynamicUser"]; ok {
			t.Errorf("%s sets DynamicUser: it implies RemoveIPC, which deletes the rings in /dev/shm", u.file)
		}
	}
}

// settingsOf maps each key of a unit file to its value (the last one
// given), comments and section headers left out.
func settingsOf(unit string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// systemd-analyze verify accepts both units without a word about them:
// copied to a temporary directory, ExecStart pointing at an executable
// that exists (this test binary; verify checks only that it exists).
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testenv.Skipf(t, "systemd-analyze is missing (Debian package systemd; scripts/deps.sh test installs it): %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"verify"}
	for _, u := range units {
		b, err := os.ReadFile(u.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("ExecStart=/usr/local/bin/ringfire ")) {
			t.Fatalf("%s: no ExecStart=/usr/local/bin/ringfire", u.file)
		}
		b = bytes.ReplaceAll(b, []byte("/usr/local/bin/ringfire"), []byte(exe))
		if err := os.WriteFile(filepath.Join(dir, u.file), b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Join(dir, u.as))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, analyze, args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// verify exits 0 on warnings such as unknown keys: any line about our
	// files fails the test (lines about the host's own units do not).
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, dir) || strings.Contains(line, "ringfire.service") || strings.Contains(line, "ringfire@") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	t.Logf("systemd-analyze %s: %d bytes of output", strings.Join(args, " "), len(out))
}
