package replica_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
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
	if got := mirLoop.Stats().Members; got != len(modes) {
		t.Fatalf("mirror loop has %d members, want %d (one per connected mirror)", got, len(modes))
	}
	if got := srcLoop.Stats().Members; got != len(modes) {
		t.Fatalf("server loop has %d members, want %d", got, len(modes))
	}
	for range 60 {
		for _, src := range srcs {
			src.push(50)
		}
		time.Sleep(200 * time.Microsecond) // pacing the producer, not synchronization
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
