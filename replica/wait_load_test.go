package replica_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// Loaded runs in the default wait (adaptive): a source ring in /dev/shm
// written in bursts of loadBurst records every millisecond, served and
// mirrored over a real transport between two namespaces.
const (
	loadBursts = 200
	loadBurst  = 2000
)

// loadedRun serves a ring in the default wait over mode to a mirror in
// the default wait, pushes loadBursts bursts of loadBurst records a
// millisecond apart once the mirror has its first record, and returns
// the mirror's and the server's statistics once every record is
// mirrored, and the process's heap allocations during the load.
func loadedRun(t *testing.T, mode string) (replica.MirrorStats, replica.ServerStats, uint64) {
	p := netns.NewPair(t)
	dir := shmDir(t)
	src := newSourceAt(t, p.A, p.AAddr, 1<<17, filepath.Join(dir, "source"))
	base, keyed := strings.CutSuffix(mode, "-keyed")
	scfg, mcfg := transportConfigs(base)
	if keyed { // TLS: the mirror's reader goroutine queues every frame (no direct reads)
		scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
	}
	srv := src.serve(scfg)
	mcfg.From, mcfg.Ring = fromOldest, filepath.Join(dir, "mirror")
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	src.push(1)
	mr.waitFor(1, 10*time.Second)
	// The poll's ticker is made before the count: a receive from it
	// allocates nothing (waitFor's poll makes a timer each time).
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	src.pushPaced(loadBursts*loadBurst, loadBurst, time.Millisecond)
	last := uint64(1 + loadBursts*loadBurst)
	deadline := time.Now().Add(30 * time.Second)
	for mr.m.Stats().Next <= last {
		if time.Now().After(deadline) {
			t.Fatalf("mirror stuck: %+v", mr.m.Stats())
		}
		<-tick.C
	}
	runtime.ReadMemStats(&after)
	return mr.m.Stats(), srv.Stats(), after.Mallocs - before.Mallocs
}

// The default wait's loops never sleep with work queued that no
// descriptor shows (a TCP frame the mirror's reader queued, whose wake-up
// was lost): the hook that counts such sleeps (WaitStats.PendingSleeps)
// stays at zero through a loaded run, over TCP (plain, read by the loop
// itself, and keyed, whose reader goroutine queues every record's frame),
// kernel UDP and AF_XDP.
// And over the datagram transports the hot paths allocate nothing under
// load: the process's heap allocations while 400,000 records go through
// the sender and the mirror stay within loadAllocs, over plain TCP too.
// (TLS allocates for its records: the keyed session is not counted.)
func TestDefaultWaitLoaded(t *testing.T) {
	eachMode(t, []string{"tcp", "tcp-keyed", "unicast", "xdp-unicast"}, func(t *testing.T, mode string) {
		mst, sst, mallocs := loadedRun(t, mode)
		t.Logf("mirror wait %+v; sender waits %d (hot %d); %d heap allocations", mst.Wait, sst.SenderWaits, sst.SenderHotWaits, mallocs)
		if mst.Wait.PendingSleeps != 0 {
			t.Errorf("the mirror's loop slept to its bound %d times with a TCP frame queued (a lost wake-up)", mst.Wait.PendingSleeps)
		}
		if mst.Records < loadBursts*loadBurst {
			t.Errorf("mirrored %d records, want %d", mst.Records, loadBursts*loadBurst)
		}
		if mode != "tcp-keyed" && mallocs > loadAllocs {
			t.Errorf("%d heap allocations in the process during the loaded run, want at most %d", mallocs, loadAllocs)
		}
	})
}

// loadAllocs is the allowance of TestDefaultWaitLoaded for what the
// process allocates beside the hot paths, measured with a heap profile of
// the loaded phase: over AF_XDP, its neighbour cache revalidating the
// mirror's address through netlink (transport's routes.get, about 110
// objects a revalidation), and the session's few TCP frames (NAK
// answers, heartbeats); over kernel UDP, 14 to 29 in all.
const loadAllocs = 300

// A Loop's turns that carry a batch of records (one sender round of
// full frames, the mirror's steps through their datagrams) allocate
// nothing, counted process-wide with testing.AllocsPerRun, over AF_XDP
// and kernel UDP, with both loops in the default wait.
func TestBatchTurnsAllocateNothing(t *testing.T) {
	for _, mode := range []string{"xdp-unicast", "unicast"} {
		t.Run(mode, func(t *testing.T) {
			netns.Require(t)
			p := netns.NewPair(t)
			srcLoop, st := newAdaptiveTurnedLoop(t)
			mirLoop, mt := newAdaptiveTurnedLoop(t)
			tt := turners{tb: t, loops: []*replica.LoopTurner{st, mt}}
			src := newSourceAt(t, p.A, p.AAddr, 1<<14, filepath.Join(shmDir(t), "source"))
			scfg, mcfg := dirConfigs(mode, 0)
			scfg.Loop, mcfg.Loop = srcLoop, mirLoop
			src.serve(scfg)
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			tt.until("the sender and the mirror on their loops", func() bool {
				return srcLoop.Stats().Members == 1 && mirLoop.Stats().Members == 1
			})
			tt.until("the mirror's first datagram", func() bool { return mr.m.Stats().Datagrams > 0 })
			const batch = 1000
			carry := func() {
				src.push(batch)
				want := src.w.Next() - 1
				tt.until("the batch mirrored", func() bool { return mr.m.Stats().Next > want })
			}
			carry() // warm up: the buffers of a full batch
			if n := testing.AllocsPerRun(20, carry); n != 0 {
				t.Errorf("carrying a batch of %d records, push to mirror ring, allocates %v times", batch, n)
			}
		})
	}
}

// newAdaptiveTurnedLoop is newTurnedLoop in the default wait.
func newAdaptiveTurnedLoop(t *testing.T) (*replica.Loop, *replica.LoopTurner) {
	l, err := replica.NewLoop(replica.LoopConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, replica.NewLoopTurner(l)
}
