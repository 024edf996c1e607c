package replica_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// runLoop starts a Loop in ns and stops it at the test's end.
func runLoop(t *testing.T, ns *netns.NS, wm replica.WaitMode) *replica.Loop {
	t.Helper()
	l, err := replica.NewLoop(replica.LoopConfig{Wait: wm})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ns.Go(func() { done <- l.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Loop.Run: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("Loop.Close: %v", err)
		}
		if err := l.Run(context.Background()); !errors.Is(err, replica.ErrLoopRunning) {
			t.Errorf("Run after Close: %v, want ErrLoopRunning", err)
		}
	})
	return l
}

// Three rings, each over its own transport, served by one Loop and
// mirrored by another, in every wait mode, every 7th DATA datagram of
// each mirror lost and repaired: every mirror ring ends holding its
// source's bytes, and the loops, not threads of their own, ran the
// senders and the receive loops.
func TestLoopsReplicate(t *testing.T) {
	sets := map[string][]string{
		"kernel": {"unicast", "multicast", "tcp"},
		"xdp":    {"xdp-unicast", "xdp-multicast", "tcp"},
	}
	for _, name := range replica.WaitModes() {
		wm, err := replica.ParseWaitMode(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range []string{"kernel", "xdp"} {
			t.Run(name+"/"+set, func(t *testing.T) { loopsReplicate(t, wm, sets[set]) })
		}
	}
}

func loopsReplicate(t *testing.T, wm replica.WaitMode, modes []string) {
	netns.Require(t)
	p := netns.NewPair(t)
	srcLoop, mirLoop := runLoop(t, p.A, wm), runLoop(t, p.B, wm)
	var srcs []*source
	var mrs []*mirror
	for i, mode := range modes {
		src := newSource(t, p.A, p.AAddr, 1<<13)
		scfg, mcfg := dirConfigs(mode, i)
		scfg.Loop, mcfg.Loop = srcLoop, mirLoop
		src.serve(scfg)
		mcfg.Ring = filepath.Join(t.TempDir(), fmt.Sprintf("mirror%d", i))
		var data uint64 // DATA datagrams seen (under the faulty transport's lock)
		faults := faulty.Faults{Drop: func(k wire.Kind, _, _ uint64) bool {
			if k != wire.KindData {
				return false
			}
			data++
			return data%7 == 0
		}}
		if mode != "tcp" {
			mcfg.NewTransport = wrapTransport(mcfg.NewTransport, func(tr replica.Transport) replica.Transport {
				return faulty.WrapPollable(tr, faults)
			})
		}
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		srcs, mrs = append(srcs, src), append(mrs, mr)
	}
	testenv.Until(t, 10*time.Second, "every connected mirror in the mirror loop", func() bool { return mirLoop.Stats().Members == len(modes) })
	// Each Serve's sender joins its loop on a goroutine of its own.
	testenv.Until(t, 10*time.Second, "every sender in the server loop", func() bool { return srcLoop.Stats().Members == len(modes) })
	// Bursts of 50 at the mirrors' pace: each burst once all mirrors have
	// the one before (a ring of 8,192 is never lapped).
	for k := uint64(1); k <= 60; k++ {
		for _, src := range srcs {
			src.push(50)
		}
		for _, mr := range mrs {
			mr.waitFor(50*k, 20*time.Second)
		}
	}
	for i, mr := range mrs {
		mr.waitFor(3000, 20*time.Second)
		mr.close()
		st := mr.m.Stats()
		if st.Next != 3001 || st.Gaps != 0 {
			t.Fatalf("%s: mirror stats %+v", modes[i], st)
		}
		if modes[i] != "tcp" && st.NaksSent == 0 {
			t.Errorf("%s: no NAK: the injected loss did not happen", modes[i])
		}
		sameSlots(t, srcs[i].path, mr.path, 1)
	}
	if st := mirLoop.Stats(); st.Turns == 0 || st.Busy == 0 {
		t.Fatalf("mirror loop stats %+v: it never stepped a mirror", st)
	}
	if wm == replica.WaitBlock {
		if st := mirLoop.Stats().Wait; st.Sleeps == 0 {
			t.Errorf("block mode: the mirror loop never slept (%+v)", st)
		}
	}
}

// countingPeeker counts the receives of a Pollable, Peeker transport.
type countingPeeker struct {
	replica.Transport
	recvs atomic.Uint64
}

func (c *countingPeeker) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	c.recvs.Add(1)
	return c.Transport.RecvBatch(ms, wait)
}
func (c *countingPeeker) PollFDs() []int          { return c.Transport.(replica.Pollable).PollFDs() }
func (c *countingPeeker) OnArrival(notify func()) { c.Transport.(replica.Pollable).OnArrival(notify) }
func (c *countingPeeker) Pending(now time.Time) bool {
	return c.Transport.(replica.Peeker).Pending(now)
}
func (c *countingPeeker) Arrived() bool { return c.Transport.(replica.Peeker).Arrived() }

// An idle mirror on a yielding Loop costs no receive per turn: over
// thousands of turns with nothing arriving, its AF_XDP transport (a
// Peeker) is asked to receive only when something is due (punch, STATUS);
// a record pushed then still arrives at once.
func TestLoopSkipsIdleMirror(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	mirLoop := runLoop(t, p.B, replica.WaitYield)
	src := newSource(t, p.A, p.AAddr, 1<<10)
	scfg, mcfg := dirConfigs("xdp-unicast", 0)
	src.serve(scfg)
	mcfg.Loop = mirLoop
	var tr *countingPeeker
	mcfg.NewTransport = wrapTransport(mcfg.NewTransport, func(in replica.Transport) replica.Transport {
		tr = &countingPeeker{Transport: in}
		return tr
	})
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	mr.connected()
	src.push(1)
	mr.waitFor(1, 10*time.Second)
	turns, recvs := mirLoop.Stats().Turns, tr.recvs.Load()
	testenv.Until(t, 20*time.Second, "20,000 idle turns", func() bool { return mirLoop.Stats().Turns >= turns+20000 })
	idleTurns, idleRecvs := mirLoop.Stats().Turns-turns, tr.recvs.Load()-recvs
	t.Logf("%d idle turns, %d receives", idleTurns, idleRecvs)
	if idleRecvs*100 > idleTurns {
		t.Fatalf("%d receives in %d idle turns: the idle mirror was stepped", idleRecvs, idleTurns)
	}
	src.push(1)
	mr.waitFor(2, 10*time.Second)
}
