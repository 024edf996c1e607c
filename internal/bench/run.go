package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"golang.org/x/sys/unix"
)

// Config chooses what a run measures. The zero value measures everything
// with the defaults.
type Config struct {
	Transports []string      // default Transports
	Record     int           // payload bytes per record (default 64)
	PingPong   time.Duration // closed loop per transport (default 2 s)
	Stress     time.Duration // open loop per offered rate (default 1 s)
	Rates      []int         // offered rates of the sweep, records/s
	Stages     time.Duration // push-to-read per stage (default 1 s)
	StageRates []int         // the producer's rates while the stages are measured (default DefaultStageRates)
	Fanout     []int         // mirror counts (default DefaultFanout)
	Sections   []string      // default all: pingpong, stress, stages, fanout, sendcost, deployed, rings
	Progress   io.Writer     // one line per measurement (default none)
	// The deployed section: wait modes (default DefaultWaits), warm-up
	// and timed round trips per measurement (default 10,000, at most
	// 10 s, and 100,000, at most DeployedFor, default 1 min), the
	// ringfire binary (default: next to this one, else built).
	Waits           []string
	WarmUp, Samples int
	DeployedFor     time.Duration
	Ringfire        string
	// Trace has every deployed process stamp the records (RINGFIRE_TRACE)
	// and reports the round trip hop by hop (Deployed.Hops).
	Trace bool
	// The rings section: ring counts (default DefaultRings; one ring alone is
	// always measured) and the wait modes of the run processes' serves
	// and mirrors (default DefaultRingsWaits). It takes WarmUp, Samples
	// and DeployedFor for its round trips, Rates and Stress for its
	// zero-loss sweep.
	Rings      []int
	RingsWaits []string
}

// DefaultRates is the default sweep, records/s: steps of 0.8 M above
// 4.8 M, where AF_XDP on two cores finds its zero-loss limit (the
// zero-loss table of ringfire-bench --sections stress).
var DefaultRates = []int{200_000, 400_000, 600_000, 800_000, 1_200_000, 1_600_000, 2_400_000, 3_200_000, 4_800_000, 5_600_000, 6_400_000, 7_200_000}

// DefaultStageRates are the producer's default rates while the stages are
// measured, records/s.
var DefaultStageRates = []int{stageRate}

// DefaultFanout is the fan-out's default mirror counts.
var DefaultFanout = []int{1, 4, 16}

// DefaultRings is the rings section's default ring counts.
var DefaultRings = []int{1, 4, 16}

// procs is GOMAXPROCS during a run. Every endpoint of a run (sources,
// mirrors, echo, pinger) shares this process, where in production each is
// a process of its own with its own Ps: with the machine's 2 Ps, a
// spinning pinger and a sender hold both, and a mirror parked in Go's
// poller waits for sysmon (up to 10 ms) to be readied.
const procs = 8

// Sections are the parts of a run.
var Sections = []string{"pingpong", "stress", "stages", "fanout", "sendcost", "deployed", "rings"}

func (c *Config) defaults() {
	if len(c.Transports) == 0 {
		c.Transports = Transports
	}
	if c.Record == 0 {
		c.Record = 64
	}
	c.PingPong = cmp(c.PingPong, 2*time.Second)
	c.Stress = cmp(c.Stress, time.Second)
	c.Stages = cmp(c.Stages, time.Second)
	if len(c.StageRates) == 0 {
		c.StageRates = DefaultStageRates
	}
	if len(c.Rates) == 0 {
		c.Rates = DefaultRates
	}
	if len(c.Fanout) == 0 {
		c.Fanout = DefaultFanout
	}
	if len(c.Sections) == 0 {
		c.Sections = Sections
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if len(c.Waits) == 0 {
		c.Waits = DefaultWaits
	}
	c.WarmUp = cmpInt(c.WarmUp, 10_000)
	c.Samples = cmpInt(c.Samples, 100_000)
	c.DeployedFor = cmp(c.DeployedFor, time.Minute)
	if len(c.Rings) == 0 {
		c.Rings = DefaultRings
	}
	if len(c.RingsWaits) == 0 {
		c.RingsWaits = DefaultRingsWaits
	}
}

func cmpInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func cmp(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Run measures, in one run on one veth pair between two namespaces it
// creates and removes, what cfg asks for. It needs root.
func Run(ctx context.Context, cfg Config) (*report.Report, error) {
	cfg.defaults()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(procs, runtime.NumCPU())))
	r, err := newRig()
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := &report.Report{Machine: machine(), Started: time.Now(), Record: cfg.Record}
	rep.Machine.Procs = runtime.GOMAXPROCS(0)
	rep.Machine.Stall = measureStall(2 * cfg.Stages)
	steps := plan(&cfg, rep)
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		fmt.Fprintf(cfg.Progress, "bench: %s\n", s.name)
		if err := s.run(r); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v", s.name, err))
			fmt.Fprintf(cfg.Progress, "bench: %s: %v\n", s.name, err)
		}
	}
	rep.Elapsed = report.Duration(time.Since(rep.Started))
	return rep, nil
}

type step struct {
	name string
	run  func(*rig) error
}

// plan lists the measurements of cfg, each adding to rep.
func plan(cfg *Config, rep *report.Report) []step {
	var steps []step
	has := func(s string) bool { return slices.Contains(cfg.Sections, s) }
	for _, tr := range cfg.Transports {
		if has("pingpong") {
			steps = append(steps, step{"pingpong " + tr, func(r *rig) error {
				l, err := r.pingPong(tr, cfg.Record, cfg.PingPong)
				if err == nil {
					rep.PingPong = append(rep.PingPong, l)
				}
				return err
			}})
			if dt := datagramPath(tr); dt != "" {
				steps = append(steps, step{"datagram round trip " + dt, func(r *rig) error {
					l, err := r.datagramRoundTrip(dt, cfg.Record, cfg.PingPong)
					if err == nil {
						rep.Datagram = append(rep.Datagram, l)
					}
					return err
				}})
			}
		}
		if has("stress") {
			steps = append(steps, step{"stress " + tr, func(r *rig) error {
				runs, err := r.sweep(tr, cfg.Record, cfg.Rates, cfg.Stress)
				rep.Stress = append(rep.Stress, runs...)
				return err
			}})
			for _, w := range cfg.Waits {
				steps = append(steps, step{"zero-loss " + tr + " wait " + w, func(r *rig) error {
					best, err := r.zeroLoss(tr, w, cfg.Record, cfg.Rates, cfg.Stress)
					rep.ZeroLoss = append(rep.ZeroLoss, best)
					return err
				}})
			}
		}
	}
	return append(steps, planRest(cfg, rep, has)...)
}

func planRest(cfg *Config, rep *report.Report, has func(string) bool) []step {
	var steps []step
	if has("stages") {
		tr := bestOf(cfg.Transports)
		for i, rate := range cfg.StageRates {
			steps = append(steps, step{fmt.Sprintf("stages over %s at %d/s", tr, rate), func(r *rig) error {
				ls, err := r.stages(tr, cfg.Record, cfg.Stages, rate, i == 0)
				rep.Stages = append(rep.Stages, ls...)
				return err
			}})
		}
	}
	for _, tr := range FanoutTransports {
		if !has("fanout") || !slices.Contains(cfg.Transports, tr) {
			continue
		}
		for _, n := range cfg.Fanout {
			steps = append(steps, step{fmt.Sprintf("fanout %s to %d", tr, n), func(r *rig) error {
				f, err := r.fanout(tr, n, cfg.Record, cfg.Stages)
				if err == nil {
					rep.Fanout = append(rep.Fanout, f)
				}
				return err
			}})
		}
	}
	if has("deployed") {
		steps = append(steps, planDeployed(cfg, rep)...)
	}
	if has("rings") {
		steps = append(steps, planRings(cfg, rep)...)
	}
	if has("sendcost") {
		for _, n := range cfg.Fanout {
			steps = append(steps, step{fmt.Sprintf("send cost to %d", n), func(r *rig) error {
				c, err := r.sendCost(n, cfg.Record, 500*time.Millisecond)
				if err == nil {
					rep.SendCost = append(rep.SendCost, c)
				}
				return err
			}})
		}
	}
	return steps
}

// planDeployed lists the deployed measurements: each transport the
// section supports with each wait mode (a loop's only over unicast), the
// hand-offs alone in each of those waits that polls, then the datagram
// alone in each style.
func planDeployed(cfg *Config, rep *report.Report) []step {
	var steps []step
	for _, tr := range cfg.Transports {
		if !slices.Contains(DeployedTransports, tr) {
			continue
		}
		for _, w := range cfg.Waits {
			if _, _, loop := report.LoopWait(w); loop && multicast(tr) {
				continue // a run file's mirrors are unicast here
			}
			steps = append(steps, step{"deployed " + tr + " wait " + w, func(r *rig) error {
				d, err := r.deployed(cfg, tr, w)
				if err == nil {
					rep.Deployed = append(rep.Deployed, d)
				}
				return err
			}})
		}
	}
	rep.Machine.Network += "; deployed: two namespaces joined by two veth pairs, one per direction"
	var relays []string
	for _, w := range cfg.Waits {
		if w := report.ModeOf(w); slices.Contains(relayWaits, w) && !slices.Contains(relays, w) {
			relays = append(relays, w)
		}
	}
	for _, w := range relays {
		for _, n := range RelayProcs {
			steps = append(steps, step{fmt.Sprintf("deployed relay %d wait %s", n, w), func(r *rig) error {
				d, err := r.deployedRelay(cfg, n, w)
				if err == nil {
					rep.DeployedRelay = append(rep.DeployedRelay, d)
				}
				return err
			}})
		}
	}
	for _, style := range role.DatagramStyles {
		steps = append(steps, step{"deployed datagram " + style, func(r *rig) error {
			d, err := r.deployedDatagram(cfg, style)
			if err == nil {
				rep.DeployedDatagram = append(rep.DeployedDatagram, d)
			}
			return err
		}})
	}
	return steps
}

// bestOf is the transport the stages use: AF_XDP unicast when measured.
func bestOf(trs []string) string {
	for _, t := range []string{"xdp-unicast", "udp-unicast"} {
		if slices.Contains(trs, t) {
			return t
		}
	}
	return trs[0]
}

// machine describes this host.
func machine() report.Machine {
	m := report.Machine{Cores: runtime.NumCPU(), Go: runtime.Version(),
		Network: "two network namespaces, one veth pair, MTU 1500"}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
