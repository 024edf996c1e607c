package bench

import (
	"fmt"
	"sync/atomic"
	"time"

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
// mirrors and serves again; a leaf on the source host mirrors the hub).
// With acks it then times the source's Wait for its two mirrors
// (waitAcks).
func (r *rig) stages(tr string, size int, d time.Duration, rate int, acks bool) ([]Latency, error) {
	defer r.reset()
	p := r.pair
	src, err := r.newSource(p.A, p.AAddr, "S", size, 1<<16, tr, 0, nil)
	if err != nil {
		return nil, err
	}
	local, err := shm.OpenReader(src.w.Ring().Path(), shm.ReadOptions{Start: shm.StartHead, NoRegister: true})
	if err != nil {
		return nil, err
	}
	r.stops = append(r.stops, func() { local.Close() })
	same, err := r.newMirror(p.A, p.AAddr, src, "S-same-host", "tcp", 0, nil)
	if err != nil {
		return nil, err
	}
	// The hub serves the remote mirror's ring again in this process: the
	// mirror hands each datagram's records to the hub's sender.
	var handoff atomic.Pointer[replica.Server]
	remote, err := r.newMirror(p.B, p.BAddr, src, "S-remote", tr, 0, func(c *replica.MirrorConfig) {
		c.Published = func(seq uint64) {
			if h := handoff.Load(); h != nil {
				h.Handoff(seq)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	hub, err := r.serve(p.B, p.BAddr, remote.path, tr, 1, nil)
	if err != nil {
		return nil, err
	}
	handoff.Store(hub)
	leaf, err := r.newMirror(p.A, p.AAddr, &source{srv: hub}, "S-leaf", tr, 1, nil)
	if err != nil {
		return nil, err
	}
	readers := []*shm.Reader{local, same.rd, remote.rd, leaf.rd}
	names := []string{"source host", "mirror, same host (tcp)", "mirror, other host (" + tr + ")", "hub → leaf (" + tr + ")"}
	hs, err := r.measure(src, readers, d, rate)
	if err != nil {
		return nil, err
	}
	out := make([]Latency, len(hs))
	for i, h := range hs {
		out[i] = Latency{Name: fmt.Sprintf("%s at %s/s", names[i], fmtSI(float64(rate))), Lat: h.percentiles()}
	}
	if !acks {
		return out, nil
	}
	ls, err := r.waitAcks(src, 2)
	return append(out, ls...), err
}

// measure pushes at rate for d (after a warm-up) while one goroutine
// busy-polls every reader in turn and records each record's push-to-read
// time per reader.
func (r *rig) measure(src *source, readers []*shm.Reader, d time.Duration, rate int) ([]hist, error) {
	hs := make([]hist, len(readers))
	for i := range hs {
		hs[i] = newHist()
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
					hs[i].record(r.since(ts))
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
	_, err := pace(d, rate, func(int) error { return src.push(r) }, func() {
		between()
		// The poller yields the CPU between polls, as a reader with the
		// yield strategy would: a busy poll would starve the serve and
		// mirror threads that share the two cores with it.
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	})
	return err
}
