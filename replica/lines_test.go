package replica_test

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// twoLines is a source and a mirror namespace joined by three independent
// veth networks: the pair's own for TCP, one for line A, one for line B.
type twoLines struct {
	p      *netns.Pair
	la, lb netns.Link
	src    *source
}

var groupB = netip.MustParseAddrPort("239.255.1.1:7501")

func newTwoLines(t *testing.T) *twoLines {
	t.Helper()
	p, src := pairSource(t, 1<<14)
	tl := &twoLines{p: p, src: src}
	var err error
	if tl.la, err = p.AddLink(); err != nil {
		t.Fatal(err)
	}
	if tl.lb, err = p.AddLink(); err != nil {
		t.Fatal(err)
	}
	return tl
}

// serve serves the source on both lines (wide: the datagrams carry the
// wide session's trailer, WideMulticast).
func (tl *twoLines) serve(wide ...bool) *replica.Server {
	return tl.src.serve(replica.ServerConfig{Multicast: mcastGroup(), Iface: tl.la.AAddr,
		MulticastB: groupB, IfaceB: tl.lb.AAddr, WideMulticast: len(wide) > 0 && wide[0]})
}

// mirrorCfg is a mirror of both lines; line A's datagrams leave from
// another address than the TCP session's (AnySource).
func (tl *twoLines) mirrorCfg() replica.MirrorConfig {
	return replica.MirrorConfig{From: fromOldest, IfaceB: tl.lb.BAddr, AnySource: true}
}

// lineEvents records a mirror's line lineEvents with their time.
type lineEvents struct {
	mu  sync.Mutex
	got []replica.MirrorEvent
	at  []time.Time
}

func (e *lineEvents) add(ev replica.MirrorEvent) {
	if ev.Kind != replica.MirrorLineDown && ev.Kind != replica.MirrorLineUp {
		return
	}
	e.mu.Lock()
	e.got, e.at = append(e.got, ev), append(e.at, time.Now())
	e.mu.Unlock()
}

// wait waits for the event (kind, line) and returns when it came.
func (e *lineEvents) wait(t *testing.T, kind replica.MirrorEventKind, line string) time.Time {
	t.Helper()
	var at time.Time
	waitUntil(t, 5*time.Second, kind.String()+" "+line, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for i, ev := range e.got {
			if ev.Kind == kind && ev.Line == line {
				at = e.at[i]
				return true
			}
		}
		return false
	})
	return at
}

// pushing pushes records paced until stop is closed, then returns the last.
func pushing(src *source, stop <-chan struct{}) <-chan uint64 {
	done := make(chan uint64, 1)
	go func() {
		tick := time.NewTicker(200 * time.Microsecond) // the producer's pace: 20 records a tick
		defer tick.Stop()
		var n uint64
		for {
			select {
			case <-stop:
				done <- n
				return
			case <-tick.C:
			}
			src.push(20)
			n += 20
		}
	}()
	return done
}

// linkSet sets a link of the mirror's namespace up or down.
func (tl *twoLines) linkSet(t *testing.T, ifn, state string) time.Time {
	t.Helper()
	if _, err := tl.p.B.Exec("ip", "link", "set", ifn, state); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// TestLinesFailover takes line A's link down mid-stream, brings it back,
// then takes line B's down: the mirror misses nothing, sends no NAK, and
// tells each loss and return within 100 ms; on its own thread, and
// stepped by a Loop.
func TestLinesFailover(t *testing.T) {
	for _, loop := range []bool{false, true} {
		t.Run(map[bool]string{false: "thread", true: "loop"}[loop], func(t *testing.T) { failover(t, loop) })
	}
}

func failover(t *testing.T, loop bool) {
	tl := newTwoLines(t)
	tl.serve()
	var ev lineEvents
	cfg := tl.mirrorCfg()
	cfg.Events = ev.add
	if loop {
		cfg.Loop = runLoop(t, tl.p.B, replica.WaitBlock)
	}
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	stop := make(chan struct{})
	last := pushing(tl.src, stop)
	mr.waitStats("both lines deliver", 10*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].First > 0 && st.Lines[1].Late+st.Lines[1].First > 100 && st.Lines[0].Received > 100
	})
	down := tl.linkSet(t, tl.la.BIf, "down")
	if d := ev.wait(t, replica.MirrorLineDown, "A").Sub(down); d > 100*time.Millisecond {
		t.Errorf("line A down told after %v, want at most 100 ms", d)
	}
	recvA := mr.m.Stats().Lines[0].Received
	up := tl.linkSet(t, tl.la.BIf, "up")
	upAt := ev.wait(t, replica.MirrorLineUp, "A")
	t.Logf("line A up told %v after ip link set up returned (negative: before it returned)", upAt.Sub(up))
	mr.waitStats("line A used again", 5*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].Received > recvA+100
	})
	down = tl.linkSet(t, tl.lb.BIf, "down")
	if d := ev.wait(t, replica.MirrorLineDown, "B").Sub(down); d > 100*time.Millisecond {
		t.Errorf("line B down told after %v, want at most 100 ms", d)
	}
	delivers(mr, 0, 500, "line A alone")
	st := tl.finish(t, mr, stop, last, "udp+udp multicast")
	oneConnection(t, st)
	// (Retransmitted may count record 1: the catch-up of a session that
	// began on an empty ring sends it over TCP after its first heartbeat.)
	if st.NaksSent != 0 {
		t.Errorf("%d NAKs while a line lived, want none", st.NaksSent)
	}
	if a, b := st.Lines[0], st.Lines[1]; a.Downs != 1 || a.Ups != 1 || b.Downs != 1 || !a.Up || b.Up {
		t.Errorf("line A %+v, line B %+v: want A down once and back, B down", a, b)
	}
}

// dropEvery drops DATA frames whose first sequence hashes to 0 mod n
// (salted per line, so that the lines lose independently), and notes
// each frame it dropped in lost.
func dropEvery(n, salt uint64, mu *sync.Mutex, lost map[uint64]bool) faulty.Faults {
	return faulty.Faults{Drop: func(k wire.Kind, seq, _ uint64) bool {
		if k != wire.KindData {
			return false
		}
		h := seq ^ salt // splitmix64: the lines' choices are independent
		h = (h ^ h>>30) * 0xBF58476D1CE4E5B9
		h = (h ^ h>>27) * 0x94D049BB133111EB
		drop := (h^h>>31)%n == 0
		if drop {
			mu.Lock()
			lost[seq] = true
			mu.Unlock()
		}
		return drop
	}}
}

// lossyLines drops about a tenth of the DATA frames of each line of a
// mirror, independently, and remembers which (by first sequence).
type lossyLines struct {
	mu   sync.Mutex
	ws   [2]*faulty.Pollable
	lost [2]map[uint64]bool
}

// lossy makes cfg's two lines lose frames.
func lossy(cfg *replica.MirrorConfig) *lossyLines {
	ll := &lossyLines{lost: [2]map[uint64]bool{{}, {}}}
	wrap := func(i int) func(replica.Transport) replica.Transport {
		return func(tr replica.Transport) replica.Transport {
			ll.mu.Lock()
			defer ll.mu.Unlock()
			ll.ws[i] = faulty.WrapPollable(tr, dropEvery(10, uint64(i+1)*0x9E3779B97F4A7C15, &ll.mu, ll.lost[i]))
			return ll.ws[i]
		}
	}
	cfg.NewTransport = wrapMirrorUDP(wrap(0))
	cfg.NewTransportB = wrapMirrorUDP(wrap(1))
	return ll
}

// check asserts what a mirror of n records over the lossy lines ended
// with (st): every record, no gap, loss on both lines counted, and NAKs
// only for the frames both lines lost.
func (ll *lossyLines) check(t *testing.T, st replica.MirrorStats, n uint64) {
	t.Helper()
	ws, lost, mu := &ll.ws, &ll.lost, &ll.mu
	if st.Gaps != 0 || st.Records != n {
		t.Fatalf("%d records, %d gaps, want %d and none", st.Records, st.Gaps, n)
	}
	a, b := ws[0].Stats(), ws[1].Stats()
	t.Logf("line A dropped %d of %d, line B %d of %d", a.Dropped, a.Received, b.Dropped, b.Received)
	if a.Dropped == 0 || b.Dropped == 0 || st.Lines[0].Lost == 0 || st.Lines[1].Lost == 0 {
		t.Fatalf("no loss counted: A %+v, B %+v", st.Lines[0], st.Lines[1])
	}
	// Only frames both lines lost are NAKed (one NAK may cover adjacent
	// ones): about a tenth of a tenth of the frames.
	mu.Lock()
	both := 0
	for seq := range lost[0] {
		if lost[1][seq] {
			both++
		}
	}
	mu.Unlock()
	frames := st.Lines[0].First + st.Lines[1].First
	t.Logf("%d frames, %d lost by both lines, %d NAKs", frames, both, st.NaksSent)
	if both == 0 || st.NaksSent == 0 || st.NaksSent > uint64(both)*3/2 {
		t.Errorf("%d NAKs for %d frames both lines lost (of %d): want about one each", st.NaksSent, both, frames)
	}
}

// TestLinesIndependentLoss loses about a tenth of the frames on each line,
// independently: the mirror NAKs only what both lost and ends identical.
func TestLinesIndependentLoss(t *testing.T) {
	tl := newTwoLines(t)
	tl.serve()
	cfg := tl.mirrorCfg()
	ll := lossy(&cfg)
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	waitDatagrams(t, mr)
	const n = 20000
	tl.src.pushPaced(n, 20, 200*time.Microsecond)
	ll.check(t, tl.settle(t, mr, n, 20*time.Second), n)
}
