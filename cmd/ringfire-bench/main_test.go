package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/deployed"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/cli"
	"github.com/ringfire/ringfire/internal/netns"
)

// TestMain runs the hidden roles of the deployed section: they re-execute
// this test binary as the bench re-executes itself.
func TestMain(m *testing.M) {
	runRole()
	os.Exit(m.Run())
}

// A short deployed run over kernel UDP and AF_XDP unicast, every endpoint
// its own process, takes every sample it was asked for in each wait mode
// (six processes, or four with a loop's wait), in each relay of the
// hand-offs alone and in each datagram style, and reports the CPU of
// every process. It asserts what was measured, never how fast.
func TestBenchDeployedSmoke(t *testing.T) {
	out, stdout := runBench(t, 4*time.Minute, "--sections", "deployed", "--transports", "udp-unicast,xdp-unicast",
		"--waits", "default,spin,loop-yield", "--warmup", "20", "--samples", "200")
	wantContains(t, "bench output", stdout, "deployed: ring to ring", "deployed: datagram alone", "deployed: CPU per second",
		"deployed: the hand-offs alone")
	rep := readReport(t, out)
	// The relays: spin and yield (loop-yield's mode; default sleeps, and
	// has none), six processes and a loop's four each.
	if len(rep.Deployed) != 6 || len(rep.DeployedDatagram) != len(role.DatagramStyles) || len(rep.DeployedRelay) != 2*len(deployed.RelayProcs) {
		t.Fatalf("%d deployed, %d datagram, %d relay measurements; want 6, %d and %d",
			len(rep.Deployed), len(rep.DeployedDatagram), len(rep.DeployedRelay), len(role.DatagramStyles), 2*len(deployed.RelayProcs))
	}
	for _, d := range rep.Deployed {
		if d.Wait == "loop-yield" {
			checkDeployed(t, d, "pinger", "echo", "run 1", "run 2")
			continue
		}
		checkDeployed(t, d, "pinger", "serve A", "mirror A'", "echo", "serve B", "mirror B'")
	}
	for _, d := range rep.DeployedDatagram {
		checkDeployed(t, d, "pinger", "echo")
	}
	for _, d := range rep.DeployedRelay {
		roles := []string{"pinger"}
		for i := 1; i < d.Procs; i++ {
			roles = append(roles, fmt.Sprintf("relay %d", i))
		}
		if d.Transport != "shm" || (d.Wait != "yield" && d.Wait != "spin") {
			t.Errorf("relay of %d processes: %s %s", d.Procs, d.Transport, d.Wait)
		}
		checkDeployed(t, d, roles...)
	}
}

// checkDeployed asserts that d took its 200 samples and that every one of
// its processes (roles, in any order) reported the CPU it used, each a
// process of its own.
func checkDeployed(t *testing.T, d report.Deployed, roles ...string) {
	t.Helper()
	if d.Lat.Samples != 200 || d.Lat.P50 <= 0 || d.Lat.Max < d.Lat.P50 || d.Measured <= 0 {
		t.Errorf("%s %s: %+v over %v", d.Transport, d.Wait, d.Lat, time.Duration(d.Measured))
	}
	if len(d.CPU) != len(roles) {
		t.Fatalf("%s %s: CPU of %d processes, want %d: %+v", d.Transport, d.Wait, len(d.CPU), len(roles), d.CPU)
	}
	pids, got := map[int]bool{}, map[string]bool{}
	for i, c := range d.CPU {
		if c.Pid <= 0 || pids[c.Pid] || c.Seconds < 0 || c.PerSec < 0 {
			t.Errorf("%s %s: process %d: %+v", d.Transport, d.Wait, i, c)
		}
		pids[c.Pid], got[c.Role] = true, true
	}
	for _, r := range roles {
		if !got[r] {
			t.Errorf("%s %s: no CPU reported for %s: %+v", d.Transport, d.Wait, r, d.CPU)
		}
	}
}

// A short bench run over kernel UDP and AF_XDP writes its tables, a JSON
// report with a figure for every section asked for, markdown and two
// well-formed SVG charts. It asserts what was measured, never how fast.
func TestBenchSmoke(t *testing.T) {
	out, stdout := runBench(t, 2*time.Minute, "--quick", "--transports", "udp-unicast,xdp-unicast",
		"--sections", "pingpong,stress,stages,fanout,sendcost", "--fanout", "1,2", "--pingpong", "200ms", "--waits", "default,yield")
	wantContains(t, "bench output", stdout, "ping-pong round trip", "udp-unicast", "xdp-unicast", "zero-loss rate", "send cost")
	rep := readReport(t, out)
	if len(rep.PingPong) != 2 || len(rep.Datagram) != 2 || len(rep.ZeroLoss) != 4 || len(rep.Stages) != 24 || len(rep.Fanout) != 4 || len(rep.SendCost) != 2 {
		t.Fatalf("report sections: %d pingpong, %d zero-loss, %d stages, %d fan-out, %d send cost",
			len(rep.PingPong), len(rep.ZeroLoss), len(rep.Stages), len(rep.Fanout), len(rep.SendCost))
	}
	floors := 0
	for _, l := range append(append(rep.PingPong, rep.Datagram...), rep.Stages...) {
		if l.Lat.Samples == 0 || l.Lat.P50 <= 0 || l.Lat.Max < l.Lat.P50 {
			t.Errorf("%s: %+v", l.Name, l.Lat)
		}
		if strings.Contains(l.Name, "the hand-offs alone") {
			floors++
		}
	}
	if floors != 5 { // the stages' floors: same host, other host, hub → leaf; a mirror and the hub alone
		t.Errorf("%d rows of the stages' floor, want 5", floors)
	}
	for _, s := range rep.Stress {
		if s.Pushed == 0 || s.Delivered == 0 {
			t.Errorf("stress %s at %d/s: pushed %d, delivered %d", s.Transport, s.Rate, s.Pushed, s.Delivered)
		}
	}
	for _, name := range []string{"latency.svg", "throughput.svg"} {
		wellFormed(t, filepath.Join(out, name))
	}
	md, _ := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	wantContains(t, "benchmarks.md", string(md), "](latency.svg)", "](throughput.svg)", "## Ping-pong", "## Floors")
}

// The zero-loss sweep over TCP alone waits for its mirror's records, not
// for datagrams a TCP mirror never gets (it timed out so and reported no
// rate for TCP). It runs once per wait: the default, and a Loop per host.
func TestBenchZeroLossTCP(t *testing.T) {
	out, _ := runBench(t, time.Minute, "--sections", "stress", "--transports", "tcp",
		"--rates", "100000", "--stress", "200ms", "--waits", "default,loop-yield")
	rep := readReport(t, out)
	if len(rep.ZeroLoss) != 2 {
		t.Fatalf("zero-loss: %+v, want one per wait", rep.ZeroLoss)
	}
	for i, wait := range []string{"adaptive", "loop-yield"} {
		if z := rep.ZeroLoss[i]; z.Transport != "tcp" || z.Wait != wait || z.Rate != 100_000 {
			t.Errorf("zero-loss %d: %+v, want tcp, %s, at 100000/s", i, z, wait)
		}
	}
}

// runBench runs the bench with args, --out and --markdown, bounded by d, fails the
// test on an error and returns the output directory and what it printed.
func runBench(t *testing.T, d time.Duration, args ...string) (out, stdout string) {
	t.Helper()
	netns.Require(t)
	out = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var so, se bytes.Buffer
	if err := run(ctx, append(args, "--out", out, "--markdown", filepath.Join(out, "benchmarks.md")), &so, &se); err != nil {
		t.Fatalf("bench: %v\n%s", err, &se)
	}
	return out, so.String()
}

// readReport reads the bench.json of a run into dir and fails the test
// if any measurement failed.
func readReport(t *testing.T, dir string) report.Report {
	t.Helper()
	var rep report.Report
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 0 {
		t.Fatalf("measurements failed: %v", rep.Notes)
	}
	return rep
}

func wellFormed(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--transports", "pigeon"}, "--transports"},
		{[]string{"--sections", "all"}, "--sections"},
		{[]string{"--rates", "1,x"}, "--rates"},
		{[]string{"--record", "8"}, "--record"},
		{[]string{"--fanout", "0"}, "--fanout"},
		{[]string{"--waits", "spin,"}, "--waits"},
		{[]string{"--samples", "0"}, "--samples"},
		{[]string{"--rings", "1,x"}, "--rings"},
		{[]string{"--rings", "1,51"}, "at most 50 rings"},
		{[]string{"--rings-waits", ","}, "--rings-waits"},
		{[]string{"--archive-rates", "1,x"}, "--archive-rates"},
		{[]string{"--archive-syncs", "none,sometimes"}, "--archive-syncs"},
		{[]string{"--archive-disk-records", "8"}, "--archive-disk-records"},
		{[]string{"--archive-seek", "10"}, "--archive-seek"},
		{[]string{"--archive-seeks", "0"}, "--archive-seeks"},
		{[]string{"--archive-step", "0s"}, "--archive-step"},
		{[]string{"--archive-catchup-records", "0"}, "--archive-catchup-records"},
		{[]string{"--archive-catchup-rate", "-1"}, "--archive-catchup-rate"},
		{[]string{"--archive-catchup-live", "0s"}, "--archive-catchup-live"},
		{[]string{"--archive-catchup-transport", "pigeon"}, "--archive-catchup-transport"},
		{[]string{"--open-rates", "20000,x"}, "--open-rates"},
		{[]string{"--open-step", "0s"}, "--open-step"},
		{[]string{"--open-warmup", "-1s"}, "--open-warmup"},
		{[]string{"--open-zero-loss", "-5"}, "--open-zero-loss"},
		{[]string{"--open-transport", "tcp"}, "--open-transport"},
		{[]string{"--lines-transport", "udp-unicast"}, "--lines-transport"},
		{[]string{"--lines-wait", "loop-yield"}, "--lines-wait"},
		{[]string{"--lines-rate", "0"}, "--lines-rate"},
		{[]string{"--lines-for", "0s"}, "--lines-for"},
		{[]string{"--lines-delay", "-1ms"}, "--lines-delay"},
		{[]string{"--lines-loss", "1"}, "--lines-loss"},
		{[]string{"--lines-loss", "0"}, "--lines-loss"},
		{[]string{"--lines-seed", "0"}, "--lines-seed"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--markdown", "page.md"}, "--markdown"},
		{[]string{"--render", "no/such/bench.json"}, "--render"},
		{[]string{"--render", "bench.json", "--sections", "stress"}, "--sections: --render measures nothing"},
	} {
		var so, se bytes.Buffer
		err := run(context.Background(), c.args, &so, &se)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error that mentions %q", c.args, err, c.want)
		}
	}
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

func TestHelp(t *testing.T) {
	var so, se bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &so, &se); err != nil {
		t.Fatal(err)
	}
	wantContains(t, "--help", se.String(), "usage: ringfire-bench [flags]", "--transports", "--sections", "--rates",
		"--fanout", "--out", "--json", "--quick", "--waits", "--warmup", "--samples", "--deployed-for", "--ringfire", "--rings", "--rings-waits",
		"--archive-rates", "--archive-dir", "--archive-seek", "--open-rates", "--open-step", "--open-warmup", "--open-transport", "--open-zero-loss",
		"--lines-transport", "--lines-wait", "--lines-rate", "--lines-for", "--lines-delay", "--lines-loss", "--lines-seed", "--markdown", "--render", "ringfire-bench --render docs/bench/bench.json --out docs/bench --markdown docs/benchmarks.md")
}

// The product binary links neither the harness nor package testing.
func TestRingfireLinksNoTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../ringfire").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/ringfire: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "testing" || strings.Contains(p, "/internal/bench") || strings.HasSuffix(p, "/internal/netns") {
			t.Errorf("cmd/ringfire depends on %s", p)
		}
	}
}

// --render measures nothing (no root, no namespace): from the committed
// bench.json it writes the charts and the very page committed in docs/,
// its charts linked relative to it, and leaves the JSON where it was.
func TestRenderCommitted(t *testing.T) {
	docs := filepath.Join(t.TempDir(), "docs")
	out, md := filepath.Join(docs, "bench"), filepath.Join(docs, "benchmarks.md")
	var so, se bytes.Buffer
	if err := run(context.Background(), []string{"--render", "../../docs/bench/bench.json", "--out", out, "--markdown", md}, &so, &se); err != nil {
		t.Fatalf("render: %v\n%s", err, &se)
	}
	wantContains(t, "render output", so.String(), "ping-pong round trip", "wrote ")
	for _, name := range []string{"latency.svg", "throughput.svg"} {
		wellFormed(t, filepath.Join(out, name))
	}
	if _, err := os.Stat(filepath.Join(out, "bench.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("render wrote a bench.json (%v)", err)
	}
	got, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rendered page differs from docs/benchmarks.md (%d against %d bytes)", len(got), len(want))
	}
}
