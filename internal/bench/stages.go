package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
	"golang.org/x/sys/unix"
)

// stageRate is the producer's rate while the fan-out is measured, and the
// stages by default (Config.StageRates): low enough that every path keeps
// up, so the figures are latencies, not queues.
const stageRate = 20_000

// stages measures push-to-read latency: on the source host (a reader of
// the ring itself), on a mirror on the same host (TCP to the source), on a
// mirror on the other host over tr, and through a hub (the other host
// mirrors and serves again; a leaf on the source host mirrors the hub),
// all four at once; then each mirror path alone, with only its own
// endpoints running (what a host that carries just that path sees: on two
// cores, the five busy threads of all four at once share the CPUs), the
// same-host mirror on TCP and on the source's Unix socket; then all
// four at once again with the same-host mirror on the source's Unix socket
// instead of TCP; all four at once with each host's endpoints on one
// replica.Loop (two hot loops instead of four), on TCP and on the Unix
// socket; then the floors of all four at once, of a mirror alone and of
// the hub alone (stagesFloor). With acks it times the source's Wait for
// its two mirrors after the first (waitAcks).
func (r *rig) stages(tr string, size int, d time.Duration, rate int, acks bool) ([]report.Latency, error) {
	defer r.reset()
	at := fmt.Sprintf(" at %s/s", report.FormatSI(float64(rate)))
	out, e, err := r.allAtOnce(tr, size, d, rate, false, false, at)
	if err != nil {
		return out, err
	}
	lost := e.reconnects()
	if acks {
		ls, err := r.waitAcks(e.src, 2)
		out = append(out, ls...)
		lost = errors.Join(lost, err)
	}
	for _, alone := range []struct {
		path     stagePath
		unixSame bool
	}{{pathSame, false}, {pathSame, true}, {pathRemote, false}, {pathHub, false}} {
		r.reset()
		e, err := r.stageEnds(tr, size, alone.path, false, alone.unixSame)
		if err != nil {
			return out, errors.Join(lost, err)
		}
		last := len(e.readers) - 1 // the path's own mirror
		hs, err := r.measure(e.src, e.readers[last:], d, rate)
		if err != nil {
			return out, errors.Join(lost, err)
		}
		out = append(out, report.Latency{Name: e.names[last] + ", alone," + at, Lat: hs[0].Percentiles()})
		lost = errors.Join(lost, e.reconnects())
	}
	for _, set := range []struct{ loops, unixSame bool }{{false, true}, {true, false}, {true, true}} {
		r.reset()
		ls, e, err := r.allAtOnce(tr, size, d, rate, set.loops, set.unixSame, at)
		out = append(out, ls...)
		if err != nil {
			return out, errors.Join(lost, err)
		}
		lost = errors.Join(lost, e.reconnects())
	}
	r.reset()
	floor, err := r.stagesFloor(size, d, rate)
	return append(out, floor...), errors.Join(lost, err)
}

// allAtOnce measures every path at once, with a thread per endpoint or a
// Loop per host, the same-host mirror on TCP or on the source's Unix
// socket; the source host's own reader only in the first set (thread per
// endpoint, TCP), whose row names carry no set.
func (r *rig) allAtOnce(tr string, size int, d time.Duration, rate int, loops, unixSame bool, at string) ([]report.Latency, *stageEnds, error) {
	e, err := r.stageEnds(tr, size, allPaths, loops, unixSame)
	if err != nil {
		return nil, nil, err
	}
	again := loops || unixSame // not the first set
	readers, names := e.readers, e.names
	if again {
		readers, names = readers[1:], names[1:]
	}
	hs, err := r.measure(e.src, readers, d, rate)
	if err != nil {
		return nil, nil, err
	}
	set := ""
	switch {
	case loops && unixSame:
		set = ", one Loop per host, same host on unix,"
	case loops:
		set = ", one Loop per host,"
	case unixSame:
		set = ", same host on unix,"
	}
	out := make([]report.Latency, len(hs))
	for i, h := range hs {
		out[i] = report.Latency{Name: names[i] + set + at, Lat: h.Percentiles()}
	}
	return out, e, nil
}

// hostLoops are, with loops, a running replica.Loop for each host (nil,
// nil without): each host's servers and mirrors then take turns on one
// thread, as in a process that carries many rings (ringfire run).
func (r *rig) hostLoops(loops bool) (onA, onB *replica.Loop, err error) {
	if !loops {
		return nil, nil, nil
	}
	return r.hostLoopsWith(replica.WaitAdaptive)
}

// hostLoopsWith starts a Loop per host waiting as mode.
func (r *rig) hostLoopsWith(mode replica.WaitMode) (onA, onB *replica.Loop, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan struct{}
	stop := func() {
		cancel()
		for _, d := range done {
			<-d
		}
	}
	for _, l := range []**replica.Loop{&onA, &onB} {
		if *l, err = replica.NewLoop(replica.LoopConfig{Wait: mode}); err != nil {
			stop()
			return nil, nil, err
		}
		d := make(chan struct{})
		done = append(done, d)
		go func(l *replica.Loop) { defer close(d); l.Run(ctx); l.Close() }(*l)
	}
	// Stopped after every member (stops run last to first).
	r.stops = append(r.stops, stop)
	return onA, onB, nil
}

// stagePath picks the mirrors a stages measurement runs.
type stagePath uint8

const (
	pathSame   stagePath = 1 << iota // a mirror on the source host (TCP)
	pathRemote                       // a mirror on the other host over tr
	pathHub                          // the remote mirror served again, a leaf mirroring it
	allPaths   = pathSame | pathRemote | pathHub
)

// stageEnds are the endpoints of a stages measurement: the source, and
// the readers (the source ring's first with allPaths) with their row
// names and mirrors.
type stageEnds struct {
	src     *source
	readers []*shm.Reader
	names   []string
	mirrors []*mirrorEnd // for readers[len(readers)-len(mirrors):]
}

// stageEnds starts the source and the mirrors of paths (the hub's remote
// mirror unread unless pathRemote is set too); with unixSame the same-host
// mirror dials the source's Unix socket instead of its TCP address.
func (r *rig) stageEnds(tr string, size int, paths stagePath, loops, unixSame bool) (*stageEnds, error) {
	p := r.pair
	onA, onB, err := r.hostLoops(loops)
	if err != nil {
		return nil, err
	}
	sock := ""
	if unixSame {
		sock = filepath.Join(r.dir, "S.sock")
	}
	src, err := r.newSource(p.A, p.AAddr, "S", size, 1<<16, tr, 0, func(c *replica.ServerConfig) { c.Loop, c.Unix = onA, sock })
	if err != nil {
		return nil, err
	}
	e := &stageEnds{src: src}
	if paths == allPaths {
		local, err := shm.OpenReader(src.w.Ring().Path(), shm.ReadOptions{Start: shm.StartHead, NoRegister: true})
		if err != nil {
			return nil, err
		}
		r.stops = append(r.stops, func() { local.Close() })
		e.readers, e.names = append(e.readers, local), append(e.names, "source host")
	}
	add := func(m *mirrorEnd, name string) {
		e.readers, e.names, e.mirrors = append(e.readers, m.rd), append(e.names, name), append(e.mirrors, m)
	}
	if paths&pathSame != 0 {
		over := "tcp"
		same, err := r.newMirror(p.A, p.AAddr, src, "S-same-host", over, 0, func(c *replica.MirrorConfig) {
			c.Loop = onA
			if unixSame {
				c.Source, over = replica.UnixPrefix+sock, "unix"
			}
		})
		if err != nil {
			return nil, err
		}
		add(same, "mirror, same host ("+over+")")
	}
	if paths&(pathRemote|pathHub) == 0 {
		return e, nil
	}
	// The hub serves the remote mirror's ring again in this process: the
	// mirror hands each datagram's records to the hub's sender.
	var handoff atomic.Pointer[replica.Server]
	remote, err := r.newMirror(p.B, p.BAddr, src, "S-remote", tr, 0, func(c *replica.MirrorConfig) {
		c.Loop = onB
		c.Published = func(seq uint64) {
			if h := handoff.Load(); h != nil {
				h.Handoff(seq)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if paths&pathRemote != 0 {
		add(remote, "mirror, other host ("+tr+")")
	}
	if paths&pathHub == 0 {
		return e, nil
	}
	hub, err := r.serve(p.B, p.BAddr, remote.path, tr, 1, func(c *replica.ServerConfig) { c.Loop = onB })
	if err != nil {
		return nil, err
	}
	handoff.Store(hub)
	leaf, err := r.newMirror(p.A, p.AAddr, &source{srv: hub}, "S-leaf", tr, 1, func(c *replica.MirrorConfig) { c.Loop = onA })
	if err != nil {
		return nil, err
	}
	add(leaf, "hub → leaf ("+tr+")")
	return e, nil
}

// reconnects is an error naming each mirror that connected more than once
// (its records of the gap are missing from its row), nil if none did.
func (e *stageEnds) reconnects() error {
	var errs []error
	names := e.names[len(e.names)-len(e.mirrors):]
	for i, m := range e.mirrors {
		if n := m.m.Stats().Connects; n > 1 {
			errs = append(errs, fmt.Errorf("bench: %s connected %d times (its row misses what it lost)", names[i], n))
		}
	}
	return errors.Join(errs...)
}

// measure pushes at rate for d (after a warm-up) while one goroutine
// busy-polls every reader in turn and records each record's push-to-read
// time per reader.
func (r *rig) measure(src *source, readers []*shm.Reader, d time.Duration, rate int) ([]hist.Hist, error) {
	hs := make([]hist.Hist, len(readers))
	for i := range hs {
		hs[i] = hist.New()
	}
	buf := make([]byte, len(src.rec))
	from := uint64(0) // records before it are the warm-up's
	poll := func() {
		for i, rd := range readers {
			for {
				if _, ok := rd.TryRecv(buf); !ok {
					break
				}
				if seq, ts, err := synth.Check(buf); err == nil && from > 0 && seq >= from {
					hs[i].Record(r.since(ts))
				}
			}
		}
	}
	if err := r.paced(src, 300*time.Millisecond, rate, poll); err != nil { // warm-up: punches, catch-ups
		return nil, err
	}
	from = src.w.Next()
	if err := r.paced(src, d, rate, poll); err != nil {
		return nil, err
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		poll()
	}
	return hs, nil
}

// paced pushes rate records per second for d, calling between between
// pushes (the poller; a sleep when it is empty).
func (r *rig) paced(src *source, d time.Duration, rate int, between func()) error {
	_, err := pace.Push(d, rate, func(int) error { return src.push(r) }, func() {
		between()
		// The poller yields the CPU between polls, as a reader with the
		// yield strategy would: a busy poll would starve the serve and
		// mirror threads that share the two cores with it.
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	})
	return err
}
