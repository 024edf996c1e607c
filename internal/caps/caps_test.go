package caps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/testenv"
)

// TestMain prints the effective set and exits when CAPS_TEST_CHILD is
// set: TestCurrentAsAnotherUser runs this binary so under setpriv.
func TestMain(m *testing.M) {
	if os.Getenv("CAPS_TEST_CHILD") == "1" {
		s, err := Current()
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("%#x\n", uint64(s.Effective))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestNames(t *testing.T) {
	if len(names) != unix.CAP_LAST_CAP+1 {
		t.Fatalf("%d names, want %d", len(names), unix.CAP_LAST_CAP+1)
	}
	for c, want := range map[Cap]string{
		NetAdmin: "CAP_NET_ADMIN", NetRaw: "CAP_NET_RAW", IPCLock: "CAP_IPC_LOCK",
		SysAdmin: "CAP_SYS_ADMIN", PerfMon: "CAP_PERFMON", BPF: "CAP_BPF",
		unix.CAP_CHOWN: "CAP_CHOWN", unix.CAP_SYS_RESOURCE: "CAP_SYS_RESOURCE",
		unix.CAP_CHECKPOINT_RESTORE: "CAP_CHECKPOINT_RESTORE", 63: "CAP_63",
	} {
		if got := c.String(); got != want {
			t.Errorf("Cap(%d) = %s, want %s", c, got, want)
		}
	}
	for c := range Cap(len(names)) {
		for _, s := range []string{c.String(), strings.ToLower(c.String()), strings.ToLower(c.String()[4:])} {
			if got, err := Parse(s); err != nil || got != c {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, c)
			}
		}
	}
	for _, s := range []string{"", "CAP_", "net_rawx", "CAP_63"} {
		if _, err := Parse(s); !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) = %v; want ErrUnknown", s, err)
		}
	}
}

func TestSet(t *testing.T) {
	s := Of(NetRaw, BPF, NetAdmin, BPF)
	if !s.Has(NetRaw) || !s.Has(BPF) || s.Has(PerfMon) || s.Has(63) || Set(0).Has(0) {
		t.Errorf("Has is wrong for %v", s)
	}
	if got, want := s.String(), "CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := Set(0).String(); got != "none" {
		t.Errorf("empty String = %q, want none", got)
	}
	if got := Of(s.Caps()...); got != s {
		t.Errorf("Of(Caps()) = %#x, want %#x", got, s)
	}
	admin := Of(SysAdmin)
	for _, c := range []struct {
		s    Set
		c    Cap
		want bool
	}{
		{admin, BPF, true}, {admin, PerfMon, true}, {admin, NetAdmin, false},
		{s, BPF, true}, {s, PerfMon, false}, {0, NetRaw, false},
	} {
		if got := c.s.Covers(c.c); got != c.want {
			t.Errorf("%v covers %v: %v, want %v", c.s, c.c, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	xdp := []Cap{NetRaw, NetAdmin, BPF, PerfMon, IPCLock}
	for _, c := range []struct {
		held Set
		need []Cap
		want string // "" for nil
	}{
		{Of(NetRaw, NetAdmin), []Cap{NetRaw, NetAdmin, BPF},
			"AF_XDP on eth1 needs CAP_BPF; running with CAP_NET_RAW, CAP_NET_ADMIN"},
		{0, xdp, "AF_XDP on eth1 needs CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON, CAP_IPC_LOCK; running with none"},
		{Of(xdp...), xdp, ""},
		{Of(xdp...) | Of(SysAdmin, unix.CAP_CHOWN), xdp, ""},
		{Of(NetRaw, NetAdmin, PerfMon, IPCLock, unix.CAP_CHOWN), xdp,
			"AF_XDP on eth1 needs CAP_BPF; running with CAP_NET_RAW, CAP_NET_ADMIN, CAP_PERFMON, CAP_IPC_LOCK"},
		{Of(NetRaw, NetAdmin, SysAdmin), xdp,
			"AF_XDP on eth1 needs CAP_IPC_LOCK; running with CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN"},
		{Of(NetRaw, BPF, PerfMon), []Cap{BPF, NetAdmin, NetAdmin},
			"AF_XDP on eth1 needs CAP_NET_ADMIN; running with CAP_BPF"},
		{0, nil, ""},
	} {
		err := Check("AF_XDP on eth1", c.held, c.need...)
		if c.want == "" {
			if err != nil {
				t.Errorf("Check(%v, %v) = %v, want nil", c.held, c.need, err)
			}
			continue
		}
		var me *MissingError
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrMissing) || !errors.As(err, &me) {
			t.Errorf("Check(%v, %v) = %v\nwant %s (ErrMissing)", c.held, c.need, err, c.want)
		}
		if wrapped := fmt.Errorf("op: %w", err); !errors.Is(wrapped, ErrMissing) {
			t.Errorf("a wrapped MissingError does not match ErrMissing")
		}
	}
}

// Current agrees with the kernel's own account of this thread
// (/proc/thread-self/status).
func TestCurrent(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]Set{"CapEff:": s.Effective, "CapPrm:": s.Permitted, "CapInh:": s.Inheritable}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		got, ok := fields[f[0]]
		if !ok {
			continue
		}
		found++
		want, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(got) != want {
			t.Errorf("%s %#x, /proc says %#x", f[0], uint64(got), want)
		}
	}
	if found != len(fields) {
		t.Fatalf("found %d of the capability lines in /proc/thread-self/status", found)
	}
	for _, c := range []Cap{NetRaw, BPF, unix.CAP_SYS_RESOURCE} {
		if err := CheckCurrent("x", c); (err == nil) != s.Effective.Has(c) {
			t.Errorf("CheckCurrent(%v) = %v; the effective set %v", c, err, s.Effective)
		}
	}
}

// Run as another user with ambient capabilities on both sides of the
// 32-bit boundary (CAP_NET_RAW 13, CAP_BPF 39), Current reports exactly
// those.
func TestCurrentAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skipf(t, "needs root to run as another user with capabilities")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		testenv.Skipf(t, "needs setpriv (util-linux): %v", err)
	}
	exe := copyExecutable(t)
	for _, c := range []struct {
		caps string
		want Set
	}{
		{"-all,+net_raw,+bpf", Of(NetRaw, BPF)},
		{"-all", 0},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			"--inh-caps="+c.caps, "--ambient-caps="+c.caps, "--bounding-set="+c.caps, exe)
		cmd.Env = append(os.Environ(), "CAPS_TEST_CHILD=1")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("setpriv %s: %v\n%s", c.caps, err, out)
		}
		if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("%#x", uint64(c.want)); got != want {
			t.Errorf("as uid 65534 with %s: effective %s, want %s", c.caps, got, want)
		}
	}
}

// copyExecutable copies this test binary where another user can run it.
func copyExecutable(t *testing.T) string {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "caps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "caps.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestMemlockCovers(t *testing.T) {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &l); err != nil {
		t.Fatal(err)
	}
	if ok, err := MemlockCovers(0); !ok || err != nil {
		t.Errorf("MemlockCovers(0) = %v, %v", ok, err)
	}
	if l.Cur != unix.RLIM_INFINITY {
		if ok, err := MemlockCovers(l.Cur + 1); ok || err != nil {
			t.Errorf("MemlockCovers(limit %d + 1) = %v, %v; want false", l.Cur, ok, err)
		}
		if ok, _ := MemlockCovers(l.Cur); !ok {
			t.Errorf("MemlockCovers(limit %d) = false", l.Cur)
		}
	}
}
