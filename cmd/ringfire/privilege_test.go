package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
)

// TestMain runs the CLI itself when RINGFIRE_TEST_MAIN is set: a test can
// then run ringfire as another user (this binary, copied where that user
// can execute it).
func TestMain(m *testing.M) {
	if os.Getenv("RINGFIRE_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// Without the privilege to load an XDP program (an unprivileged user, no
// capabilities), serve --xdp says why in one log line and serves over
// kernel UDP; with --require-xdp it fails.
func TestXDPFallbackWithoutPrivilege(t *testing.T) {
	unprivileged := unprivilegedServe(t, "--xdp", "veth0")
	out, err := unprivileged()
	if err != nil {
		t.Fatalf("unprivileged serve --xdp: %v\n%s", err, out)
	}
	wantContains(t, "unprivileged serve", out, "AF_XDP unavailable, falling back to kernel UDP", "needs root or CAP_BPF", "msg=serving",
		"AF_XDP on veth0 needs CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON", "running with none")
	out, err = unprivileged("--require-xdp")
	if err == nil || !strings.Contains(out, "--require-xdp") {
		t.Fatalf("unprivileged serve --require-xdp: %v\n%s", err, out)
	}
}

// unprivilegedServe prepares a namespace pair and a ring that uid 65534
// can read, and returns a function that runs this binary as
// `ringfire serve` there as uid 65534 without capabilities, with flags,
// then extra, and returns its output.
func unprivilegedServe(t *testing.T, flags ...string) func(extra ...string) (string, error) {
	t.Helper()
	netns.Require(t)
	p := netns.NewPair(t)
	dir, err := os.MkdirTemp("", "rf-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe := filepath.Join(dir, "ringfire")
	copyExecutable(t, exe)
	ring := filepath.Join(dir, "ring")
	mustRun(t, "gen", ring, "--count", "100", "--size", "56")
	for _, f := range []string{dir, ring} {
		if err := os.Chmod(f, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return func(extra ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		args := []string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
			exe, "serve", ring, "--bind", p.AAddr.String() + ":7400", "--multicast", "239.255.0.1:7401",
			"--iface", p.AAddr.String(), "--duration", "500ms"}
		cmd := p.A.Run(ctx, "setpriv", append(append(args, flags...), extra...)...)
		cmd.Env = append(os.Environ(), "RINGFIRE_TEST_MAIN=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// xdpCaps are the capabilities AF_XDP needs here, as setpriv names them:
// the least set (TestXDPEachCapabilityNeeded; internal/caps says what
// each is for), the one contrib/systemd's units grant.
var xdpCaps = []string{"net_raw", "net_admin", "bpf", "perfmon", "ipc_lock"}

// capUser runs this binary as uid 65534 with chosen capabilities; its
// rings live in dir, a directory under /dev/shm that uid owns.
type capUser struct{ exe, dir string }

func newCapUser(t *testing.T) *capUser {
	t.Helper()
	netns.Require(t)
	bin, err := os.MkdirTemp("", "rf-caps-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	dir, err := os.MkdirTemp("/dev/shm", "rf-caps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{bin, dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	u := &capUser{exe: filepath.Join(bin, "ringfire"), dir: dir}
	copyExecutable(t, u.exe)
	return u
}

// gen writes a ring of n synthetic records in u.dir that u owns, and
// returns its path.
func (u *capUser) gen(t *testing.T, n string) string {
	t.Helper()
	ring := filepath.Join(u.dir, "src")
	mustRun(t, "gen", ring, "--count", n, "--size", "56", "--capacity", "65536")
	if err := os.Chown(ring, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return ring
}

// cmd is an unstarted command running `ringfire args...` in ns as uid
// 65534 with exactly caps (its inheritable, ambient and bounding sets),
// and RLIMIT_MEMLOCK at 8 MiB (the usual default, below one UMEM, so that
// CAP_IPC_LOCK matters wherever the tests run).
func (u *capUser) cmd(ctx context.Context, ns *netns.NS, caps []string, args ...string) *exec.Cmd {
	set := "-all"
	for _, c := range caps {
		set += ",+" + c
	}
	pre := []string{"--memlock=8388608:8388608", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=" + set, "--ambient-caps=" + set, "--bounding-set=" + set, u.exe}
	cmd := ns.Run(ctx, "prlimit", append(pre, args...)...)
	cmd.Env = append(os.Environ(), "RINGFIRE_TEST_MAIN=1")
	cmd.WaitDelay = time.Second
	return cmd
}

// capRun is a started capUser command and what it printed.
type capRun struct {
	cmd      *exec.Cmd
	out, log bytes.Buffer
}

func (u *capUser) start(t *testing.T, ctx context.Context, ns *netns.NS, caps []string, args ...string) *capRun {
	t.Helper()
	r := &capRun{cmd: u.cmd(ctx, ns, caps, args...)}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// replicate serves a 20,000-record ring from A to a mirror in B over
// AF_XDP (multicast), both as u with caps, checks that the mirror ring is
// byte-identical to the source and validates with tail, and returns the
// serve and the mirror.
func (u *capUser) replicate(t *testing.T, caps []string) (srv, mir *capRun) {
	t.Helper()
	p := netns.NewPair(t)
	src, dst := u.gen(t, "20000"), filepath.Join(u.dir, "dst")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bind := p.AAddr.String() + ":7400"
	srv = u.start(t, ctx, p.A, caps, "serve", src, "--bind", bind, "--multicast", "239.255.0.1:7401",
		"--iface", p.AAddr.String(), "--xdp", "veth0", "--duration", "4s")
	waitListening(t, p.A, bind)
	mir = u.start(t, ctx, p.B, caps, "mirror", bind, dst, "--from", "oldest", "--iface", p.BAddr.String(),
		"--xdp", "veth0", "--duration", "2s")
	merr, serr := mir.cmd.Wait(), srv.cmd.Wait()
	if merr != nil || serr != nil {
		t.Fatalf("mirror: %v, serve: %v\nmirror:\n%s%s\nserve:\n%s%s", merr, serr, &mir.log, &mir.out, &srv.log, &srv.out)
	}
	sameRings(t, src, dst)
	out := mustRun(t, "tail", dst, "--from", "oldest", "--quiet", "--count", "20000", "--timeout", "1s")
	wantContains(t, "tail of the mirror", out, "received 20000", "checksum errors 0", "sequence errors 0")
	return srv, mir
}

// As an unprivileged user with exactly xdpCaps (ambient, as systemd's
// AmbientCapabilities= or setcap give them), serve and mirror replicate
// over AF_XDP; with CAP_BPF dropped both fall back to kernel UDP, naming
// it.
func TestXDPWithCapabilities(t *testing.T) {
	t.Run("minimal", func(t *testing.T) {
		srv, mir := newCapUser(t).replicate(t, xdpCaps)
		wantContains(t, "mirror output", mir.out.String(), "mirror: xdp multicast", "next 20001", "gaps 0")
		wantContains(t, "serve output", srv.out.String(), "  xdp: frames")
		for _, r := range []*capRun{srv, mir} {
			wantContains(t, "log", r.log.String(), `msg="datagrams over AF_XDP" iface=veth0`)
			if strings.Contains(r.log.String(), "falling back") {
				t.Errorf("fell back with %v:\n%s", xdpCaps, &r.log)
			}
		}
	})
	t.Run("without-bpf", func(t *testing.T) {
		caps := without(xdpCaps, "bpf")
		srv, mir := newCapUser(t).replicate(t, caps)
		wantContains(t, "mirror output", mir.out.String(), "mirror: udp multicast", "next 20001", "gaps 0")
		for _, r := range []*capRun{srv, mir} {
			wantContains(t, "log", r.log.String(), `msg="AF_XDP unavailable, falling back to kernel UDP" iface=veth0`,
				"AF_XDP on veth0 needs CAP_BPF; running with CAP_NET_RAW, CAP_NET_ADMIN, CAP_PERFMON, CAP_IPC_LOCK")
			wantOnce(t, r.log.String(), "falling back")
		}
	})
}

// Each capability of xdpCaps is needed: without it serve falls back to
// kernel UDP and names it, and only it. AF_PACKET needs CAP_NET_RAW alone.
func TestXDPEachCapabilityNeeded(t *testing.T) {
	u := newCapUser(t)
	p := netns.NewPair(t)
	ring := u.gen(t, "100")
	serve := func(caps []string, flags ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		args := append([]string{"serve", ring, "--bind", p.AAddr.String() + ":7400", "--multicast", "239.255.0.1:7401",
			"--iface", p.AAddr.String(), "--duration", "300ms"}, flags...)
		out, err := u.cmd(ctx, p.A, caps, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("serve %v with %v: %v\n%s", flags, caps, err, out)
		}
		return string(out)
	}
	for _, c := range xdpCaps {
		out := serve(without(xdpCaps, c), "--xdp", "veth0")
		name := "CAP_" + strings.ToUpper(c)
		wantContains(t, "serve without "+name, out, "AF_XDP unavailable, falling back to kernel UDP",
			"AF_XDP on veth0 needs "+name+"; running with ", "msg=serving")
	}
	out := serve([]string{"net_raw"}, "--transport", "afpacket", "--require-transport")
	wantContains(t, "serve --transport afpacket with CAP_NET_RAW", out, `msg="datagrams over AF_PACKET" iface=veth0`, "  afpacket: frames")
	out = serve(nil, "--transport", "afpacket")
	wantContains(t, "serve --transport afpacket without capabilities", out, "AF_PACKET on veth0 needs CAP_NET_RAW; running with none")
}

// without is caps less drop.
func without(caps []string, drop string) []string {
	var out []string
	for _, c := range caps {
		if c != drop {
			out = append(out, c)
		}
	}
	return out
}
