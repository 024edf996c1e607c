package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/netns"
)

// Config sizes the archive section. The zero value takes the defaults.
type Config struct {
	Rates       []int         // the tmpfs sweep's offered rates, records/s (DefaultRates)
	DiskRates   []int         // the disk sweeps' offered rates, MB/s of payload (DefaultDiskRates)
	DiskRecords []int         // the disk sweeps' record sizes, bytes (DefaultDiskRecords)
	Syncs       []string      // the disk sweeps' sync modes (DefaultSyncs)
	Step        time.Duration // each rate of a sweep (1 s)
	DiskDir     string        // where the disk's archives go (/var/tmp)
	DDMiB       int           // dd's size, MiB (1024)
	Replay      int           // records replayed (8 M)
	Seek        int           // records of the seek's archive (100 M)
	Seeks       int           // seeks per kind and cache (2000)
	Compress    int           // records per feed (2 M)
	// The catch-up: records a mirror catches up from the archive (10 M),
	// the producer's rate while they are archived (2 M/s), then the live
	// rate (1 M/s) for CatchupFor (3 s), live over CatchupTransport
	// (xdp-unicast); and the ringfire binary ("": next to this one, else
	// built).
	Catchup          int
	CatchupFill      int
	CatchupRate      int
	CatchupFor       time.Duration
	CatchupTransport string
	Ringfire         string
}

// Defaults. The disk rates step by 100–200 MB/s where this machine kind's
// disk ends (dd oflag=direct: 1.2–1.64 GB/s from one run to the next, so
// 64-byte records, 96 bytes an entry, fill it at 800–1100 MB/s of
// payload): with 600 then 800, a recorder that kept up with any rate
// between read as 600's, 0.73× dd in a run where it kept up with 800 in
// the other sync mode (0.90×).
var (
	DefaultRates       = []int{1_000_000, 2_000_000, 4_000_000, 6_000_000, 8_000_000, 10_000_000, 12_000_000, 14_000_000, 16_000_000}
	DefaultDiskRates   = []int{100, 200, 400, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 2000, 2400}
	DefaultDiskRecords = []int{64, 4096}
	DefaultSyncs       = []string{"none", "interval=100ms"}
)

// Defaults fills c's zero fields.
func (c *Config) Defaults() {
	if len(c.Rates) == 0 {
		c.Rates = DefaultRates
	}
	if len(c.DiskRates) == 0 {
		c.DiskRates = DefaultDiskRates
	}
	if len(c.DiskRecords) == 0 {
		c.DiskRecords = DefaultDiskRecords
	}
	if len(c.Syncs) == 0 {
		c.Syncs = DefaultSyncs
	}
	if c.Step <= 0 {
		c.Step = time.Second
	}
	if c.DiskDir == "" {
		c.DiskDir = "/var/tmp"
	}
	c.DDMiB = def(c.DDMiB, 1024)
	c.Replay = def(c.Replay, 8<<20)
	c.Seek = def(c.Seek, 100_000_000)
	c.Seeks = def(c.Seeks, 2000)
	c.Compress = def(c.Compress, 2<<20)
	c.Catchup = def(c.Catchup, 10_000_000)
	c.CatchupFill = def(c.CatchupFill, 2_000_000)
	c.CatchupRate = def(c.CatchupRate, 1_000_000)
	if c.CatchupFor <= 0 {
		c.CatchupFor = 3 * time.Second
	}
	if c.CatchupTransport == "" {
		c.CatchupTransport = CatchupTransports[0]
	}
}

func def(n, d int) int {
	if n <= 0 {
		return d
	}
	return n
}

// Record is the record size of the tmpfs sweep, replay, seek and
// compression: the 64-byte records.
const Record = 64

// Bench measures the archive section. Its processes start from a
// launcher in namespace A of pair (the source host of the other
// sections); the catch-up's mirror from one in namespace B.
type Bench struct {
	cfg      Config
	shm      string // a directory of this run in /dev/shm (tmpfs)
	pair     *netns.Pair
	l, lb    *proc.Launcher // in A; in B (made by the catch-up)
	self     string
	ringfire string // the ringfire binary (found by the catch-up)
	built    string // a temporary directory of a ringfire built here
	notes    []string
}

// New returns the section's measurements, with its rings and tmpfs
// archives under shmDir. It starts nothing until a measurement.
func New(pair *netns.Pair, shmDir string, cfg Config) (*Bench, error) {
	cfg.Defaults()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return &Bench{cfg: cfg, shm: shmDir, pair: pair, l: proc.NewLauncher(pair.A), self: self}, nil
}

// Close stops the launchers and removes a ringfire built for the run.
func (b *Bench) Close() {
	b.l.Close()
	if b.lb != nil {
		b.lb.Close()
	}
	if b.built != "" {
		os.RemoveAll(b.built)
	}
}

// Notes are what the section's measurements said about themselves (a
// size scaled down, a tool absent), for the report's notes.
func (b *Bench) Notes() []string { return b.notes }

func (b *Bench) note(format string, args ...any) {
	b.notes = append(b.notes, "archive: "+fmt.Sprintf(format, args...))
}

// readyWait bounds a role's ready and result lines beyond what it was
// asked to do.
const readyWait = 30 * time.Second

// procs are the processes of one measurement.
type procs []*proc.Proc

// start starts a role of this binary, waits for its ready line and pins
// it to cpu (when the machine has more than one).
func (ps *procs) start(b *Bench, name string, s role.Spec, cpu int) (*proc.Proc, error) {
	js, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(b.l, name, []string{b.self}, []string{role.Env + "=" + string(js)}, true)
	if err != nil {
		return nil, err
	}
	*ps = append(*ps, p)
	if _, err := p.Expect(role.LineReady, readyWait); err != nil {
		return nil, err
	}
	if runtime.NumCPU() > 1 {
		if err := proc.Pin(p.Pid(), cpu%runtime.NumCPU()); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// result waits (at most d) for p's result line and decodes it into v.
func result(p *proc.Proc, d time.Duration, v any) error {
	line, err := p.Expect(role.LineResult, d)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		return fmt.Errorf("archive: %s result %q: %w", p.Role(), line, err)
	}
	return nil
}

func (ps procs) stop() error {
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		errs = append(errs, ps[i].Stop())
	}
	return errors.Join(errs...)
}

// cpuTimes reads every process's CPU time.
func (ps procs) cpuTimes() ([]time.Duration, error) {
	ts := make([]time.Duration, len(ps))
	for i, p := range ps {
		t, err := proc.CPUTime(p.Pid())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("archive: CPU time of %s: %w", p.Role(), err), p.Alive())
		}
		ts[i] = t
	}
	return ts, nil
}

// cpuOver is each process's CPU between two readings wall apart.
func (ps procs) cpuOver(before, after []time.Duration, wall time.Duration) []report.ProcCPU {
	var cs []report.ProcCPU
	for i, p := range ps {
		used := (after[i] - before[i]).Seconds()
		cs = append(cs, report.ProcCPU{Role: p.Role(), Pid: p.Pid(), Seconds: used, PerSec: used / wall.Seconds()})
	}
	return cs
}

// Quick shrinks c to a smoke run's sizes (ringfire-bench --quick).
func (c *Config) Quick() {
	c.Rates, c.DiskRates, c.DiskRecords = []int{200_000, 1_000_000}, []int{50, 200}, []int{64}
	c.Step, c.DDMiB = 300*time.Millisecond, 64
	c.Replay, c.Seek, c.Seeks, c.Compress = 1<<20, 2_000_000, 200, 1<<19
	c.Catchup, c.CatchupFor = 2_000_000, time.Second
}
