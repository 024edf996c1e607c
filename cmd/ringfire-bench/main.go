// Command ringfire-bench measures every ringfire datagram transport side by
// side in two network namespaces it creates (root is needed), and writes
// the report as tables, bench.json, SVG charts and the page
// docs/benchmarks.md; --render writes them again from a bench.json,
// measuring nothing. It is a command of its own so that the ringfire
// binary links neither the harness nor package testing (which
// internal/netns needs).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench"
	"github.com/ringfire/ringfire/internal/bench/deployed"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/cli"
)

const name = "ringfire-bench"

func main() {
	runRole()
	cli.Main(name, run)
}

// runRole runs, and exits with, the hidden role (pinger or echo of the
// deployed section) this process was started for, if any.
func runRole() {
	run, ok := role.FromEnv()
	if !ok {
		return
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s role: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

const benchHelp = `Bench measures ringfire's paths side by side in one run, between network
namespaces and veth pairs it creates and removes (root is needed), and
prints a table per measurement. Benchmarks report; they never fail on a
time.

Sections (--sections, all by default, run in this order):
  pingpong  the closed-loop round trip of one record, per transport
            (--transports, --pingpong)
  stress    an open loop at each of --rates (--stress each): the highest
            rate each transport carries with no loss, once per --waits
  stages    push to read on the source host, on a mirror on the same
            host, on the other host and through a hub (--stage-rates)
  fanout    one source to 1, 4 and 16 mirrors (--fanout)
  sendcost  one sendmmsg to N mirrors against N sendto calls
  deployed  the ring-to-ring round trip, every endpoint its own process:
            pinger, serve, mirror, echo, serve, mirror over two veth
            pairs (a loop wait such as loop-yield: one ringfire run per
            host), beside the datagram alone and the hand-offs alone,
            with each process's CPU and the machine's own stalls
            (--waits, --warmup, --samples, --deployed-for, --trace)
  rings     1, 4 and 16 rings on one ringfire run per side over AF_XDP:
            the aggregate zero-loss rate and each ring's round trip
            against one ring's, beside the floor: as many UDP datagrams
            in flight at once between two processes (--rings,
            --rings-waits)
  openloop  one way from a producer process to a reader process on the
            mirror host at each of --open-rates and the zero-loss rate:
            p50, p99, p99.9, losses, each process's CPU, and the knee,
            the highest rate whose p99 stays within 1 ms (--open-*)
  lines     A/B lines: the zero-loss rate on one line and on two; one
            way through two delay lines (forwarder processes between the
            hosts): clean, one line delayed by --lines-delay, both
            dropping --lines-loss of their DATA frames, with the NAKs
            against the frames both lines lost (--lines-*)
  archive   recording into tmpfs and onto the disk against dd, replay at
            speed max, seeks in a 100 M-record archive, compression, and
            a mirror catching up 10 M records from serve --archive
            (--archive-*; every file it makes is removed)

Output: --out DIR writes bench.json and the charts latency.svg,
throughput.svg and openloop.svg; --markdown FILE the page
docs/benchmarks.md (make bench passes both). --render FILE measures
nothing: it writes the same tables, charts and page from a bench.json:
  ringfire-bench --render docs/bench/bench.json --out docs/bench --markdown docs/benchmarks.md`

type benchFlags struct {
	transports, sections, rates, fanout string
	stageRates                          string
	waits, ringfire                     string
	rings, ringsWaits                   string
	record, warmUp, samples             int
	pingpong, stress, stages, deployed  time.Duration
	out, markdown, render, cpuProfile   string
	json, quick, trace                  bool
	archive                             archiveFlags
	open                                openFlags
	lines                               linesFlags
}

// run is the command with its arguments (after the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet(name, "", "[flags]", benchHelp, stderr)
	var f benchFlags
	fs.StringVar(&f.transports, "transports", strings.Join(bench.Transports, ","), "comma-separated `list` of transports")
	fs.StringVar(&f.sections, "sections", strings.Join(bench.Sections, ","), "comma-separated `list` of sections")
	fs.StringVar(&f.rates, "rates", joinInts(bench.DefaultRates), "offered `rates` of the stress sweep, records/s")
	fs.StringVar(&f.fanout, "fanout", joinInts(bench.DefaultFanout), "mirror `counts` of the fan-out")
	fs.StringVar(&f.stageRates, "stage-rates", joinInts(bench.DefaultStageRates), "the producer's `rates` while the stages are measured, records/s")
	fs.IntVar(&f.record, "record", 64, "record payload `bytes`")
	fs.DurationVar(&f.pingpong, "pingpong", 2*time.Second, "closed loop `duration` per transport")
	fs.DurationVar(&f.stress, "stress", time.Second, "open loop `duration` per rate")
	fs.DurationVar(&f.stages, "stages", time.Second, "`duration` of each stage and fan-out measurement")
	fs.StringVar(&f.waits, "waits", strings.Join(deployed.DefaultWaits, ","),
		"deployed, openloop and the zero-loss sweep: wait `modes` of serve and mirror (default: no flag, spin: --spin, X: --wait X, loop-X: one ringfire run per host, its serve and mirror on one loop waiting as X, deployed unicast only)")
	fs.IntVar(&f.warmUp, "warmup", 10_000, "deployed: warm-up round trips per measurement")
	fs.IntVar(&f.samples, "samples", 100_000, "deployed: timed round trips per measurement")
	fs.DurationVar(&f.deployed, "deployed-for", time.Minute, "deployed: at most this `duration` of samples per measurement")
	fs.StringVar(&f.ringfire, "ringfire", "", "deployed: the ringfire `binary` (default: next to this one, else built)")
	fs.StringVar(&f.rings, "rings", joinInts(bench.DefaultRings), "rings: ring `counts` served and mirrored by one ringfire run per side (one ring alone is always measured)")
	fs.StringVar(&f.ringsWaits, "rings-waits", strings.Join(deployed.DefaultRingsWaits, ","), "rings: wait `modes` of the run processes' serves and mirrors (default: no key, X: wait = X, loop-X: every unit of a process on one loop waiting as X, loopN-X: on N loops)")
	f.open.register(fs)
	f.lines.register(fs)
	f.archive.register(fs)
	fs.StringVar(&f.out, "out", "", "write bench.json and the SVG charts into `dir`")
	fs.StringVar(&f.markdown, "markdown", "", "write the page of the results (docs/benchmarks.md) to `file`, its charts linked relative to it in --out")
	fs.StringVar(&f.render, "render", "", "measure nothing: render the report in `file` (a bench.json) as tables, charts (--out) and page (--markdown)")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON instead of tables")
	fs.BoolVar(&f.quick, "quick", false, "short durations and a short sweep (a smoke run)")
	fs.BoolVar(&f.trace, "trace", false, "deployed: measure each round trip a second time with every process stamping the records (the figures stay the untraced run's); report that run hop by hop, and for its round trips slower than p99 and p99.9 the hop that took the excess and how its thread spent it (running, runnable, asleep: the kernel's scheduler trace)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (every section but deployed runs in it) to `file`")
	if _, err := cli.ParseArgs(name, fs, args, 0); err != nil {
		return cli.HelpOr(err)
	}
	if f.markdown != "" && f.out == "" {
		return usagef("--markdown: needs --out, the directory of the charts it links")
	}
	if f.render != "" {
		if err := renderFlags(fs); err != nil {
			return err
		}
		return renderOnly(f, stdout)
	}
	cfg, err := f.config(stderr)
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		stop, err := startProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := bench.Run(ctx, cfg)
	if rep == nil {
		return err
	}
	rep.Command = strings.TrimSpace(name + " " + strings.Join(args, " "))
	if werr := writeBench(rep, f, stdout); werr != nil {
		return werr
	}
	return err
}

func (f *benchFlags) config(progress io.Writer) (bench.Config, error) {
	cfg := bench.Config{Record: f.record, PingPong: f.pingpong, Stress: f.stress, Stages: f.stages, Progress: progress,
		WarmUp: f.warmUp, Samples: f.samples, DeployedFor: f.deployed, Ringfire: f.ringfire, Trace: f.trace}
	if f.warmUp <= 0 || f.samples <= 0 || f.deployed <= 0 {
		return cfg, usagef("--warmup, --samples and --deployed-for must be positive")
	}
	var err error
	if cfg.Waits, err = waitList("--waits", f.waits); err != nil {
		return cfg, err
	}
	if cfg.RingsWaits, err = waitList("--rings-waits", f.ringsWaits); err != nil {
		return cfg, err
	}
	if cfg.Rings, err = parseInts("--rings", f.rings); err != nil {
		return cfg, err
	}
	if slices.Max(cfg.Rings) > deployed.MaxRings {
		return cfg, usagef("--rings %q: at most %d rings", f.rings, deployed.MaxRings)
	}
	cfg.Transports = strings.Split(f.transports, ",")
	for _, t := range cfg.Transports {
		if !bench.ValidTransport(t) {
			return cfg, usagef("--transports: unknown %q (have %s, each optionally +%s)", t, strings.Join(bench.Transports, ", "), strings.Join(bench.KeyModes, " or +"))
		}
	}
	cfg.Sections = strings.Split(f.sections, ",")
	for _, s := range cfg.Sections {
		if !slices.Contains(bench.Sections, s) {
			return cfg, usagef("--sections: unknown %q (have %s)", s, strings.Join(bench.Sections, ", "))
		}
	}
	if cfg.Rates, err = parseInts("--rates", f.rates); err != nil {
		return cfg, err
	}
	if cfg.StageRates, err = parseInts("--stage-rates", f.stageRates); err != nil {
		return cfg, err
	}
	if cfg.Fanout, err = parseInts("--fanout", f.fanout); err != nil {
		return cfg, err
	}
	if f.record < 24 || f.record > 1400 {
		return cfg, usagef("--record %d: want 24..1400 bytes", f.record)
	}
	if cfg.Archive, err = f.archive.config(); err != nil {
		return cfg, err
	}
	if err := f.open.config(&cfg); err != nil {
		return cfg, err
	}
	if err := f.lines.config(&cfg); err != nil {
		return cfg, err
	}
	if f.quick {
		cfg.Archive.Quick()
		cfg.PingPong, cfg.Stress, cfg.Stages = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
		cfg.Rates, cfg.Fanout, cfg.Rings = []int{50_000, 200_000}, []int{1, 4}, []int{1, 4}
		cfg.WarmUp, cfg.Samples = min(cfg.WarmUp, 200), min(cfg.Samples, 2_000)
		cfg.OpenRates, cfg.OpenStep, cfg.OpenWarmUp = []int{20_000, 200_000}, 300*time.Millisecond, 300*time.Millisecond
		cfg.Lines.For = min(cfg.Lines.For, 500*time.Millisecond)
	}
	return cfg, nil
}

func writeBench(rep *report.Report, f benchFlags, stdout io.Writer) error {
	if f.json {
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
	} else if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	wrote, err := rep.WriteSVG(f.out)
	if err != nil {
		return err
	}
	if f.render == "" { // a rendered report's JSON is where it came from
		path := filepath.Join(f.out, "bench.json")
		if err := writeFile(path, rep.WriteJSON); err != nil {
			return err
		}
		wrote = append(wrote, path)
	}
	if f.markdown != "" {
		rel, err := filepath.Rel(filepath.Dir(f.markdown), f.out)
		if err != nil {
			return fmt.Errorf("--markdown: %w", err)
		}
		if err := writeFile(f.markdown, func(w io.Writer) error { return rep.WriteMarkdown(w, filepath.ToSlash(rel)) }); err != nil {
			return err
		}
		wrote = append(wrote, f.markdown)
	}
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(wrote, ", "))
	return nil
}

// renderFlags refuses, with --render, a flag that only a measurement
// takes: it would be ignored.
func renderFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "render", "out", "markdown", "json":
		default:
			if err == nil {
				err = usagef("--%s: --render measures nothing (it takes --out, --markdown and --json)", fl.Name)
			}
		}
	})
	return err
}

// renderOnly is --render: the report in f.render written again as
// tables, charts and page, nothing measured.
func renderOnly(f benchFlags, stdout io.Writer) error {
	fh, err := os.Open(f.render)
	if err != nil {
		return usagef("--render: %v", err)
	}
	defer fh.Close()
	rep, err := report.ReadJSON(fh)
	if err != nil {
		return usagef("--render %s: %v", f.render, err)
	}
	return writeBench(rep, f, stdout)
}

func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// waitList parses a comma-separated list of wait mode names.
func waitList(flag, s string) ([]string, error) {
	var ws []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w == "" || strings.HasPrefix(w, "-") {
			return nil, usagef("%s %q: want comma-separated wait mode names", flag, s)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, usagef("%s %q: want comma-separated positive integers", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// startProfile starts a CPU profile into path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	fh, err := os.Create(path)
	if err != nil {
		return nil, usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		fh.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); fh.Close() }, nil
}
