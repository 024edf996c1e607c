package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/deployed"
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
		if x.Transport != deployed.RingsTransport || x.Wait != "yield" || len(x.Sweep) == 0 {
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
