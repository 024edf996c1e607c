package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/archive"
	"github.com/ringfire/ringfire/internal/bench/deployed"
	"github.com/ringfire/ringfire/internal/bench/report"
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
	Sections   []string      // default all: pingpong, stress, stages, fanout, sendcost, deployed, rings, openloop, lines, archive
	Progress   io.Writer     // one line per measurement (default none)
	// The deployed section: wait modes (default deployed.DefaultWaits), warm-up
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
	// and mirrors (default deployed.DefaultRingsWaits). It takes WarmUp, Samples
	// and DeployedFor for its round trips, Rates and Stress for its
	// zero-loss sweep.
	Rings      []int
	RingsWaits []string
	// The openloop section: its offered rates (default DefaultOpenRates),
	// each for OpenStep (default 3 s) after a warm-up of OpenWarmUp
	// (default 1 s) at the first, over OpenTransport (default xdp-unicast;
	// one of deployed.Transports), once per wait of Waits; the zero-loss
	// rate it also sweeps when the run's stress section measured none for
	// the transport and wait (0: none).
	OpenRates            []int
	OpenStep, OpenWarmUp time.Duration
	OpenTransport        string
	OpenZeroLoss         int
	// Lines is the lines section's (its zero value: the defaults).
	Lines deployed.LinesConfig
	// Archive sizes the archive section (its zero value: the defaults).
	Archive archive.Config
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
var Sections = []string{"pingpong", "stress", "stages", "fanout", "sendcost", "deployed", "rings", "openloop", "lines", "archive"}

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
		c.Waits = deployed.DefaultWaits
	}
	c.WarmUp = cmpInt(c.WarmUp, 10_000)
	c.Samples = cmpInt(c.Samples, 100_000)
	c.DeployedFor = cmp(c.DeployedFor, time.Minute)
	if len(c.Rings) == 0 {
		c.Rings = DefaultRings
	}
	if len(c.RingsWaits) == 0 {
		c.RingsWaits = deployed.DefaultRingsWaits
	}
	if len(c.OpenRates) == 0 {
		c.OpenRates = DefaultOpenRates
	}
	c.OpenStep = cmp(c.OpenStep, 3*time.Second)
	c.OpenWarmUp = cmp(c.OpenWarmUp, time.Second)
	if c.OpenTransport == "" {
		c.OpenTransport = deployed.RingsTransport
	}
	c.Lines.Defaults()
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
	r.dep = deployed.New(&r.owner, r.dir, deployed.Config{Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples,
		DeployedFor: cfg.DeployedFor, Ringfire: cfg.Ringfire, Trace: cfg.Trace, Rates: cfg.Rates, Stress: cfg.Stress,
		OpenStep: cfg.OpenStep, OpenWarmUp: cfg.OpenWarmUp, Lines: cfg.Lines})
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
