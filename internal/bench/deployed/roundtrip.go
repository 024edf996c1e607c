package deployed

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/trace"
)

// Transports are the transports the deployed section measures:
// all four ringfire processes get the transport's flags.
var Transports = []string{"udp-unicast", "udp-multicast", "xdp-unicast", "xdp-multicast"}

// DefaultWaits are the wait modes the deployed section measures by
// default. "default" passes no flag to serve and mirror, "spin" passes
// --spin, any other name X passes --wait X.
var DefaultWaits = []string{"default", "spin"}

// readyWait bounds a role's ready line and a serve's listening.
const readyWait = 30 * time.Second

// deployedNet is the deployed section's topology, made at its first
// measurement: two namespaces, N1 (pair.A) and N2 (pair.B), joined by two
// veth pairs, veth0 carrying A → A' and veth1 carrying B → B', so that
// each interface end has one AF_XDP user as between real hosts; and a
// launcher in each namespace.
type deployedNet struct {
	pair     *netns.Pair
	back     netns.Link
	n1, n2   *proc.Launcher
	ringfire string // the ringfire binary
	self     string // this binary, for the roles
	built    string // temporary directory of a ringfire built here
}

func (b *Bench) deployedNet() (*deployedNet, error) {
	if b.net != nil {
		return b.net, nil
	}
	d := &deployedNet{}
	var err error
	if d.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if d.ringfire, d.built, err = proc.FindRingfire(b.cfg.Ringfire, d.self); err != nil {
		return nil, err
	}
	if d.pair, err = b.owner.NewPair(); err != nil {
		d.close()
		return nil, err
	}
	if d.back, err = d.pair.AddLink(); err != nil {
		d.close()
		return nil, err
	}
	d.n1, d.n2 = proc.NewLauncher(d.pair.A), proc.NewLauncher(d.pair.B)
	b.net = d
	return d, nil
}

// deployedDir is the deployed topology (made at its first use) and a new
// directory for one measurement's rings, named with prefix, which the
// caller removes.
func (b *Bench) deployedDir(prefix string) (*deployedNet, string, error) {
	d, err := b.deployedNet()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp(b.dir, prefix)
	if err != nil {
		return nil, "", err
	}
	return d, dir, nil
}

func (d *deployedNet) close() {
	for _, l := range []*proc.Launcher{d.n1, d.n2} {
		if l != nil {
			l.Close()
		}
	}
	if d.built != "" {
		os.RemoveAll(d.built)
	}
}

// hop is one replication hop: a ring served from one namespace and
// mirrored into the other over one link.
type hop struct {
	from, to   *proc.Launcher
	fromNS     *netns.NS
	src, dst   netip.Addr // serve's and mirror's addresses
	ifname     string     // the link's interface, in both namespaces
	dir        int        // tells apart the ports and groups of the hops
	ring, copy string     // the served ring and the mirror ring
}

func (h hop) bind() netip.AddrPort { return netip.AddrPortFrom(h.src, uint16(7400+h.dir)) }

// procSet is the processes of one measurement.
type procSet []*proc.Proc

func (ps *procSet) start(l *proc.Launcher, role string, argv, env []string, lines bool) (*proc.Proc, error) {
	p, err := proc.Start(l, role, argv, env, lines)
	if err == nil {
		*ps = append(*ps, p)
	}
	return p, err
}

// role starts a role of this binary.
func (ps *procSet) role(d *deployedNet, l *proc.Launcher, name string, s role.Spec) (*proc.Proc, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return ps.start(l, name, []string{d.self}, []string{role.Env + "=" + string(b)}, true)
}

// roleReady starts a role that says ready and waits until it has.
func (ps *procSet) roleReady(d *deployedNet, l *proc.Launcher, name string, s role.Spec) (*proc.Proc, error) {
	p, err := ps.role(d, l, name, s)
	if err != nil {
		return nil, err
	}
	if _, err := p.Expect(role.LineReady, readyWait); err != nil {
		return nil, err
	}
	return p, nil
}

// stopAll stops every process, last started first.
func (ps procSet) stopAll() error {
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		errs = append(errs, ps[i].Stop())
	}
	return errors.Join(errs...)
}

// RoundTrip measures the ring-to-ring round trip over tr with wait mode
// wait, every endpoint its own process: pinger → A → serve (N1) → mirror
// (N2) → A' → echo → B → serve (N2) → mirror (N1) → B' → pinger. A loop's
// wait name (loop-yield) runs four processes instead: the serve and the
// mirror of each host are one ringfire run on one Loop (loop.go).
//
// With Config.Trace it measures twice: the figures are the first run's,
// the hops and the tails a second, traced run's. The stamps and the
// scheduler's trace cost the round trip microseconds (xdp-unicast,
// loop-yield: p50 12.0 µs untraced, 17.6 traced, ringfire-bench
// --sections deployed with and without --trace), which the figures must
// not carry.
func (b *Bench) RoundTrip(tr, wait string) (report.Deployed, error) {
	res, err := b.roundTrip(tr, wait, false)
	if err != nil || !b.cfg.Trace {
		return res, err
	}
	traced, err := b.roundTrip(tr, wait, true)
	res.Hops, res.Tails = traced.Hops, traced.Tails
	return res, err
}

// roundTrip is one measurement of RoundTrip, traced or not.
func (b *Bench) roundTrip(tr, wait string, traced bool) (report.Deployed, error) {
	cfg := &b.cfg
	d, dir, err := b.deployedDir("deployed-")
	if err != nil {
		return report.Deployed{}, err
	}
	defer os.RemoveAll(dir)
	var ps procSet
	defer func() { ps.stopRuns() }() // ps as it is at return
	traceDir := ""
	if traced { // the processes inherit the environment
		traceDir = filepath.Join(dir, "trace")
		if err := os.Mkdir(traceDir, 0o755); err != nil {
			return report.Deployed{}, err
		}
		os.Setenv(trace.Env, traceDir)
		defer os.Unsetenv(trace.Env)
	}
	// The roles wait as serve and mirror, or the loop, do.
	spec := role.Spec{Wait: report.ModeOf(wait), Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples, Limit: report.Duration(cfg.DeployedFor)}
	ping, echo := spec, spec
	ping.Role, echo.Role = role.RingPinger, role.RingEcho
	start, chain := ps.sixProcs, traceChain
	if _, _, loop := report.LoopWait(wait); loop {
		start, chain = ps.fourProcs, loopChain
	}
	pinger, err := start(d, dir, tr, wait, ping, echo)
	if err != nil {
		return report.Deployed{}, err
	}
	res, sched, err := ps.measure(pinger, cfg, traced)
	res.Transport, res.Wait = tr, wait
	if err == nil && traceDir != "" {
		if err = ps.stopRuns(); err == nil { // they write their stamps as they stop
			var run *traceRun
			if run, err = readTrace(traceDir, cfg.WarmUp, chain); err == nil {
				res.Hops, res.Tails = run.hops(), run.tails(sched)
			}
		}
		ps = nil
	}
	return res, err
}

// sixProcs starts the pinger, serve A, the echo, serve B and the two
// mirrors, each its own process, with their rings in dir, and returns the
// pinger (ping and echo are the roles' specs without their rings).
func (ps *procSet) sixProcs(d *deployedNet, dir, tr, wait string, ping, echo role.Spec) (*proc.Proc, error) {
	p, q := d.pair, d.back
	out := hop{from: d.n1, to: d.n2, fromNS: p.A, src: p.AAddr, dst: p.BAddr, ifname: p.AIf, dir: 0,
		ring: filepath.Join(dir, "A"), copy: filepath.Join(dir, "A-mirror")}
	back := hop{from: d.n2, to: d.n1, fromNS: p.B, src: q.BAddr, dst: q.AAddr, ifname: q.BIf, dir: 1,
		ring: filepath.Join(dir, "B"), copy: filepath.Join(dir, "B-mirror")}
	ping.Ring, ping.Read = out.ring, back.copy
	echo.Ring, echo.Read = back.ring, out.copy
	pinger, err := ps.roleReady(d, d.n1, "pinger", ping)
	if err != nil {
		return nil, err
	}
	if err := ps.serve(d, out, tr, wait, "serve A"); err != nil {
		return nil, err
	}
	if _, err := ps.roleReady(d, d.n2, "echo", echo); err != nil {
		return nil, err
	}
	if err := ps.serve(d, back, tr, wait, "serve B"); err != nil {
		return nil, err
	}
	if _, err := ps.start(out.to, "mirror A'", mirrorArgs(d.ringfire, out, tr, wait), nil, false); err != nil {
		return nil, err
	}
	if _, err := ps.start(back.to, "mirror B'", mirrorArgs(d.ringfire, back, tr, wait), nil, false); err != nil {
		return nil, err
	}
	return pinger, nil
}

// serve starts a ringfire serve of h and waits until it listens.
func (ps *procSet) serve(d *deployedNet, h hop, tr, wait, role string) error {
	p, err := ps.start(h.from, role, serveArgs(d.ringfire, h, tr, wait), nil, false)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(readyWait)
	for {
		ok, err := proc.Listening(h.fromNS, h.bind())
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		}
		if err := p.Alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return p.Failed(fmt.Sprintf("not listening on %v within %v", h.bind(), readyWait))
		}
		time.Sleep(time.Millisecond) // polling the listen table, bounded by the deadline
	}
}

// Datagram measures one datagram from N1 to an echo process in
// N2 and back over veth0, both processes waiting in style.
func (b *Bench) Datagram(style string) (report.Deployed, error) {
	cfg := &b.cfg
	d, err := b.deployedNet()
	if err != nil {
		return report.Deployed{}, err
	}
	onA := netip.AddrPortFrom(d.pair.AAddr, 7701).String()
	onB := netip.AddrPortFrom(d.pair.BAddr, 7701).String()
	var ps procSet
	defer func() { ps.stopAll() }() // ps as it is at return
	spec := role.Spec{Wait: style, Record: cfg.Record, WarmUp: cfg.WarmUp, Samples: cfg.Samples, Limit: report.Duration(cfg.DeployedFor)}
	ping, echo := spec, spec
	ping.Role, ping.Local, ping.Peer = role.DgramPinger, onA, onB
	echo.Role, echo.Local, echo.Peer = role.DgramEcho, onB, onA
	if _, err := ps.roleReady(d, d.n2, "echo", echo); err != nil {
		return report.Deployed{}, err
	}
	pinger, err := ps.role(d, d.n1, "pinger", ping)
	if err != nil {
		return report.Deployed{}, err
	}
	res, _, err := ps.measure(pinger, cfg, false)
	res.Transport, res.Wait = "udp", style
	return res, err
}

// measure waits for the pinger's warm-up and result (timed) and decodes
// the result line.
func (ps procSet) measure(pinger *proc.Proc, cfg *Config, traced bool) (report.Deployed, *schedLog, error) {
	line, wall, cpu, hic, sched, err := ps.timed(pinger, cfg, traced)
	if err != nil {
		return report.Deployed{}, nil, err
	}
	res := report.Deployed{Measured: report.Duration(wall), CPU: cpu, Hiccups: hic}
	if err := json.Unmarshal([]byte(line), &res.Lat); err != nil {
		return report.Deployed{}, nil, fmt.Errorf("deployed: pinger result %q: %w", line, err)
	}
	return res, sched, nil
}

// timed waits for the pinger's warm-up, takes every process's CPU time,
// waits for its result and takes them again: the result line, the wall
// time of the samples, each process's CPU over it and the hiccups a
// sleeping thread of the bench saw meanwhile; traced, the
// scheduler's trace of the processes' threads over the samples (nil
// where the kernel's tracefs cannot be used).
func (ps procSet) timed(pinger *proc.Proc, cfg *Config, traced bool) (string, time.Duration, []report.ProcCPU, report.Hiccups, *schedLog, error) {
	// The pinger bounds its warm-up and samples in time, and each round
	// trip; these bounds are the parent's, a little wider.
	if _, err := pinger.Expect(role.LineMeasuring, readyWait+role.FirstEchoWait+role.WarmUpMax+role.EchoWait); err != nil {
		return "", 0, nil, report.Hiccups{}, nil, ps.explain(err)
	}
	before, err := ps.cpuTimes()
	if err != nil {
		return "", 0, nil, report.Hiccups{}, nil, err
	}
	var st *schedTrace
	if traced {
		st, _ = startSched(ps.pids()) // nil: the tails are reported without it
	}
	hm := startHiccups()
	start := time.Now()
	line, err := pinger.Expect(role.LineResult, readyWait+cfg.DeployedFor+role.EchoWait)
	wall, hic := time.Since(start), hm.end()
	var sched *schedLog
	if st != nil {
		sched, _ = st.stop()
	}
	if err != nil {
		return "", 0, nil, hic, nil, ps.explain(err)
	}
	after, err := ps.cpuTimes()
	if err != nil {
		return "", 0, nil, hic, nil, err
	}
	return line, wall, ps.cpuOver(before, after, wall), hic, sched, nil
}

// pids are the processes' ids.
func (ps procSet) pids() []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.Pid()
	}
	return out
}

// cpuOver is each process's CPU between two readings wall apart.
func (ps procSet) cpuOver(before, after []time.Duration, wall time.Duration) []report.ProcCPU {
	var cs []report.ProcCPU
	for i, p := range ps {
		used := (after[i] - before[i]).Seconds()
		cs = append(cs, report.ProcCPU{Role: p.Role(), Pid: p.Pid(), Seconds: used, PerSec: used / wall.Seconds()})
	}
	return cs
}

// cpuTimes reads the CPU time of every process.
func (ps procSet) cpuTimes() ([]time.Duration, error) {
	ts := make([]time.Duration, len(ps))
	for i, p := range ps {
		t, err := proc.CPUTime(p.Pid())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("deployed: CPU time of %s: %w", p.Role(), err), p.Alive())
		}
		ts[i] = t
	}
	return ts, nil
}

// explain adds to a pinger's failure why other processes had exited, and
// the counters of the ringfire ones still running, which print them when
// asked to stop (SIGTERM; bounded by termWait).
func (ps procSet) explain(err error) error {
	errs := []error{err}
	for _, p := range ps {
		if perr := p.Alive(); perr != nil {
			errs = append(errs, perr)
			continue
		}
		if !p.Speaks() && p.Terminate() {
			errs = append(errs, fmt.Errorf("%s said: %s", p.Role(), proc.LastLines(p.Output(), 6)))
		}
	}
	return errors.Join(errs...)
}
