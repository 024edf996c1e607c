package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// A short open loop over AF_XDP, serve and mirror as processes and one
// ringfire run per host for a loop's wait, sweeps its two rates and the
// zero-loss rate given (no stress section in the run), in order; the
// reader accounts for every record pushed (read, lapped or lost) and
// times those it read; every process reports its CPU; the page gets the
// section and its chart. It asserts what was measured, never how fast.
func TestBenchOpenLoop(t *testing.T) {
	out, stdout := runBench(t, 2*time.Minute, "--sections", "openloop", "--waits", "default,loop-yield",
		"--open-rates", "100000,20000", "--open-zero-loss", "50000", "--open-step", "300ms", "--open-warmup", "200ms")
	wantContains(t, "bench output", stdout, "openloop: the knee", "openloop: one way")
	rep := readReport(t, out)
	if len(rep.OpenLoop) != 2 {
		t.Fatalf("%d open loops, want one per wait: %+v", len(rep.OpenLoop), rep.OpenLoop)
	}
	roles := map[string][]string{"default": {report.RoleProducer, report.RoleServe, report.RoleMirror, report.RoleReader},
		"loop-yield": {report.RoleProducer, report.RoleRun1, report.RoleRun2, report.RoleReader}}
	for i, o := range rep.OpenLoop {
		wait := []string{"default", "loop-yield"}[i]
		if o.Transport != "xdp-unicast" || o.Wait != wait || o.ZeroLoss != 50_000 || o.ZeroLossFrom != "flag" {
			t.Errorf("open loop %d: %s %s, zero-loss %d from %q; want xdp-unicast %s, 50000 from flag", i, o.Transport, o.Wait, o.ZeroLoss, o.ZeroLossFrom, wait)
		}
		var rates []int
		for _, s := range o.Steps {
			rates = append(rates, s.Rate)
			checkOpenStep(t, o.Wait, s, roles[o.Wait])
		}
		if fmt.Sprint(rates) != "[20000 50000 100000]" {
			t.Errorf("%s: rates %v, want 20000, 50000 and 100000", o.Wait, rates)
		}
	}
	wellFormed(t, filepath.Join(out, "openloop.svg"))
	md, _ := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	wantContains(t, "benchmarks.md", string(md), "## Open loop", "](openloop.svg)")
}

// checkOpenStep asserts that s pushed what its rate is due in 300 ms,
// accounts for every record, timed those it read, and has the CPU of
// each of roles, each a process of its own.
func checkOpenStep(t *testing.T, wait string, s report.OpenStep, roles []string) {
	t.Helper()
	due := uint64(s.Rate) * 3 / 10
	if s.Pushed != due || s.Received+s.Lapped+s.Lost != s.Pushed || s.Received == 0 {
		t.Errorf("%s at %d/s: pushed %d (want %d), read %d, lapped %d, lost %d", wait, s.Rate, s.Pushed, due, s.Received, s.Lapped, s.Lost)
	}
	if s.Lat.Samples != int64(s.Received) || s.Lat.P50 <= 0 || s.Lat.P99 < s.Lat.P50 || s.Lat.Max < s.Lat.P99 || s.Achieved <= 0 || s.Duration <= 0 {
		t.Errorf("%s at %d/s: one way %+v, achieved %v over %v", wait, s.Rate, s.Lat, s.Achieved, time.Duration(s.Duration))
	}
	pids := map[int]bool{}
	for i, c := range s.CPU {
		if c.Role != roles[i] || c.Pid <= 0 || pids[c.Pid] || c.Seconds < 0 || c.PerSec < 0 {
			t.Errorf("%s at %d/s: process %d: %+v, want %s", wait, s.Rate, i, c, roles[i])
		}
		pids[c.Pid] = true
	}
	if len(s.CPU) != len(roles) {
		t.Errorf("%s at %d/s: CPU of %d processes, want %d", wait, s.Rate, len(s.CPU), len(roles))
	}
}
