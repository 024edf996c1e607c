package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/netns"
)

// TestMain runs the hidden roles of the deployed and rings sections: they
// re-execute this test binary as the bench re-executes itself.
func TestMain(m *testing.M) {
	if run, ok := role.FromEnv(); ok {
		if err := run(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "bench role: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The rings section at a tiny size, one ring and two, each served and
// mirrored by one ringfire run process per side over AF_XDP: every ring
// takes every round trip asked for, at once and in turn, every rate of
// the sweep is measured with the CPU of both run processes, and the
// tables show it. It asserts what was measured, never how fast.
func TestRingsSection(t *testing.T) {
	netns.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Sections: []string{"rings"}, Rings: []int{2}, RingsWaits: []string{"yield"},
		WarmUp: 20, Samples: 200, DeployedFor: 20 * time.Second, Rates: []int{5_000, 10_000}, Stress: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) > 0 {
		t.Fatalf("notes: %q", rep.Notes)
	}
	if len(rep.Rings) != 2 || rep.Rings[0].Rings != 1 || rep.Rings[1].Rings != 2 {
		t.Fatalf("measured %+v, want one ring, then two", rep.Rings)
	}
	for _, x := range rep.Rings {
		if x.Transport != RingsTransport || x.Wait != "yield" || len(x.Sweep) == 0 {
			t.Errorf("%d rings: %s %s, %d rates", x.Rings, x.Transport, x.Wait, len(x.Sweep))
		}
		for _, s := range x.Sweep {
			if s.Pushed == 0 || s.Achieved <= 0 || len(s.CPU) != 2 {
				t.Errorf("%d rings at %d/s: %+v", x.Rings, s.Rate, s)
			}
		}
		checkRingsZeroLoss(t, x, 2)
		for kind, rt := range map[string]report.RingsRoundTrip{"at once": x.AtOnce, "in turn": x.InTurn} {
			if len(rt.PerRing) != x.Rings || rt.Lat.Samples != int64(200*x.Rings) || rt.Measured <= 0 {
				t.Errorf("%d rings %s: %d rings, %d samples in all over %v", x.Rings, kind, len(rt.PerRing), rt.Lat.Samples, time.Duration(rt.Measured))
			}
			for i, p := range rt.PerRing {
				if p.Samples != 200 || p.P50 <= 0 || p.Max < p.P50 {
					t.Errorf("%d rings %s, ring %d: %+v", x.Rings, kind, i+1, p)
				}
			}
			checkRingsCPU(t, rt.CPU, "run 1", "run 2", "pinger", "echo")
		}
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	for _, want := range []string{"rings: N rings", "rings: round trip of each ring", "rings: zero-loss sweep"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q", want)
		}
	}
}

// checkRingsZeroLoss asserts that x's zero-loss rate is the sweep's last
// lossless step (the sweep goes on past a loss until the second in a row):
// 0 when no step was lossless, else a lossless step's rate and achieved
// rate, no lossless step after it, and Capped exactly when that step is
// the last of the nRates rates.
func checkRingsZeroLoss(t *testing.T, x report.Rings, nRates int) {
	t.Helper()
	last := -1
	for i, s := range x.Sweep {
		if s.Lossless() {
			last = i
		}
	}
	z := x.ZeroLoss
	if last < 0 {
		if z.Rate != 0 || z.Capped {
			t.Errorf("%d rings: zero-loss %+v, but no rate of %+v was lossless", x.Rings, z, x.Sweep)
		}
		return
	}
	s := x.Sweep[last]
	if z.Rate != s.Rate || z.Achieved != s.Achieved || z.Capped != (last == nRates-1) {
		t.Errorf("%d rings: zero-loss %+v, want the last lossless step %+v (step %d of %d)", x.Rings, z, s, last+1, nRates)
	}
}

// checkRingsCPU asserts one CPU figure per process, each its own.
func checkRingsCPU(t *testing.T, cs []report.ProcCPU, roles ...string) {
	t.Helper()
	pids, got := map[int]bool{}, map[string]bool{}
	for _, c := range cs {
		if c.Pid <= 0 || pids[c.Pid] || c.Seconds < 0 || c.PerSec < 0 {
			t.Errorf("CPU %+v", c)
		}
		pids[c.Pid], got[c.Role] = true, true
	}
	for _, r := range roles {
		if !got[r] || len(cs) != len(roles) {
			t.Errorf("CPU of %+v, want one each of %q", cs, roles)
			return
		}
	}
}

// A run file names every ring with the keys of serve and mirror (the
// AF_XDP ones unless over kernel UDP), the wait mode's key unless
// "default", or a loop-X wait name's loop key at the top.
func TestRunFile(t *testing.T) {
	h := ringsHop{prefix: "A", dir: "/dev/shm/x", src: netip.MustParseAddr("10.77.1.1"), dst: netip.MustParseAddr("10.77.1.2"),
		ifname: "veth0", ports: portsA, wait: "yield", n: 2}
	got := runFile(netip.MustParseAddrPort("10.77.1.1:9470"), []ringsHop{h}, nil)
	for _, want := range []string{`metrics = "10.77.1.1:9470"`,
		"[[serve]]\nring = \"/dev/shm/x/A01\"\nbind = \"10.77.1.1:7800\"\nudp = 7850\niface = \"10.77.1.1\"\nxdp = \"veth0\"\nrequire-xdp = true\nwait = \"yield\"\n",
		"ring = \"/dev/shm/x/A02\"\nbind = \"10.77.1.1:7801\"\nudp = 7851\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("serving file lacks %q:\n%s", want, got)
		}
	}
	h.wait = "default"
	got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), nil, []ringsHop{h})
	want := "[[mirror]]\nsource = \"10.77.1.1:7801\"\nring = \"/dev/shm/x/A02-mirror\"\nfrom = \"oldest\"\nunicast = true\n" +
		"iface = \"10.77.1.2\"\nxdp = \"veth0\"\nrequire-xdp = true\nreconnect-ms = 50\n"
	if !strings.Contains(got, want) || strings.Contains(got, "wait") || strings.Count(got, "[[mirror]]") != 2 {
		t.Errorf("mirroring file:\n%s\nwant two mirrors, no wait key, and\n%s", got, want)
	}
	h.wait = "loop-yield"
	got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), []ringsHop{h}, []ringsHop{h})
	if !strings.Contains(got, "metrics = \"10.77.1.2:9470\"\nloop = \"yield\"\nloops = 1\n") || strings.Contains(got, "wait") {
		t.Errorf("a loop's file:\n%s\nwant the loop keys at the top, no wait key", got)
	}
	h.wait = "loop2-spin"
	if got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), []ringsHop{h}, nil); !strings.Contains(got, "loop = \"spin\"\nloops = 2\n") {
		t.Errorf("two loops' file:\n%s", got)
	}
	h.udp = true // kernel UDP: the same tables without the AF_XDP keys
	got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), []ringsHop{h}, []ringsHop{h})
	if strings.Contains(got, "xdp") || !strings.Contains(got, "iface = \"10.77.1.2\"\nreconnect-ms = 50\n") ||
		!strings.Contains(got, "udp = 7850\niface = \"10.77.1.1\"\n\n") {
		t.Errorf("a kernel UDP file:\n%s\nwant no AF_XDP key", got)
	}
}

func TestRingsLoadCapacity(t *testing.T) {
	for n, want := range map[int]uint64{1: 1 << 20, 2: 1 << 19, 3: 1 << 18, 4: 1 << 18, 16: 1 << 16, 50: 1 << 14} {
		if got := ringsLoadCapacity(n); got != want {
			t.Errorf("%d rings: capacity %d, want %d", n, got, want)
		}
	}
	if got := ringCounts(&Config{Rings: []int{4, 16, 4}}); fmt.Sprint(got) != "[1 4 16]" {
		t.Errorf("ring counts %v, want one ring first, no repeats", got)
	}
}

func TestParseMetrics(t *testing.T) {
	m := parseMetrics("# HELP x y\n# TYPE x counter\n" + `ringfire_local_mirror_naks_total{ring="L01-mirror"} 3` + "\n" +
		`ringfire_local_mirror_naks_total{ring="L02-mirror"} 4` + "\nringfire_up 1\n")
	if n, err := sumSeries(m, "ringfire_local_mirror_naks_total", []string{"L01-mirror", "L02-mirror"}); n != 7 || err != nil {
		t.Errorf("sum %d, %v; want 7", n, err)
	}
	if _, err := sumSeries(m, "ringfire_local_mirror_naks_total", []string{"L03-mirror"}); err == nil {
		t.Error("a missing ring summed")
	}
}
