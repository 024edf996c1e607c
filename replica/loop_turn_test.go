package replica_test

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// turners drives Loops from the test's goroutine (none Runs), so that
// allocations of their turns can be counted.
type turners struct {
	tb    testing.TB
	loops []*replica.LoopTurner
}

// turn runs one turn of each loop.
func (t turners) turn() {
	for _, l := range t.loops {
		l.Turn()
	}
}

// until turns both loops until ok holds: at most 2,000,000 turns and 20 s.
func (t turners) until(what string, ok func() bool) {
	t.tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; !ok(); i++ {
		if i == 2_000_000 || time.Now().After(deadline) {
			t.tb.Fatalf("%s: not reached after %d turns", what, i)
		}
		t.turn()
	}
}

// newTurnedLoop makes a Loop that the test turns; closed at the end.
func newTurnedLoop(t *testing.T) (*replica.Loop, *replica.LoopTurner) {
	l, err := replica.NewLoop(replica.LoopConfig{Wait: replica.WaitYield})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, replica.NewLoopTurner(l)
}

// A Loop's turns allocate nothing: neither an idle turn (every member
// polled, nothing found) nor the turns that carry a record from the
// source ring's write to the mirror ring, over AF_XDP and over kernel
// UDP. Counted process-wide, so the STATUS each record may prompt (the
// mirror's frame, the source's reader and telemetry) allocates nothing
// either.
func TestLoopTurnAllocatesNothing(t *testing.T) {
	for _, mode := range []string{"xdp-unicast", "unicast", "xdp-multicast"} {
		t.Run(mode, func(t *testing.T) { loopTurnAllocs(t, mode) })
	}
}

func loopTurnAllocs(t *testing.T, mode string) {
	netns.Require(t)
	p := netns.NewPair(t)
	srcLoop, st := newTurnedLoop(t)
	mirLoop, mt := newTurnedLoop(t)
	tt := turners{tb: t, loops: []*replica.LoopTurner{st, mt}}
	src := newSource(t, p.A, p.AAddr, 1<<12)
	scfg, mcfg := dirConfigs(mode, 0)
	scfg.Loop, mcfg.Loop = srcLoop, mirLoop
	src.serve(scfg)
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	tt.until("the sender and the mirror on their loops", func() bool {
		return srcLoop.Stats().Members == 1 && mirLoop.Stats().Members == 1
	})
	tt.until("the mirror's first datagram", func() bool { return mr.m.Stats().Datagrams > 0 })
	src.push(100)
	tt.until("100 records mirrored", func() bool { return mr.m.Stats().Next > 100 })

	if n := testing.AllocsPerRun(2000, tt.turn); n != 0 {
		t.Errorf("an idle turn of both loops allocates %v times", n)
	}
	seq := uint64(100)
	carry := func() {
		seq++
		if err := src.pushSynth(seq); err != nil {
			t.Fatal(err)
		}
		tt.until("the record mirrored", func() bool { return mr.m.Stats().Next > seq })
	}
	if n := testing.AllocsPerRun(200, carry); n != 0 {
		t.Errorf("carrying one record, push to mirror ring, allocates %v times", n)
	}
	st0 := mr.m.Stats()
	t.Logf("mirror %+v", st0)
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}

// loopServer serves a source over AF_XDP unicast from a Loop the test
// turns (tweak, if set, adjusts the server's settings) to a mirror of its
// own, and turns it until the mirror's PUNCH has been received.
func loopServer(t *testing.T, tweak func(*replica.ServerConfig)) (*source, *mirror, *replica.LoopTurner) {
	t.Helper()
	netns.Require(t)
	p := netns.NewPair(t)
	srcLoop, st := newTurnedLoop(t)
	src := newSource(t, p.A, p.AAddr, 1<<10)
	scfg, mcfg := dirConfigs("xdp-unicast", 0)
	scfg.Loop = srcLoop
	if tweak != nil {
		tweak(&scfg)
	}
	src.serve(scfg)
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	tt := turners{tb: t, loops: []*replica.LoopTurner{st}}
	tt.until("the sender on its loop", func() bool { return srcLoop.Stats().Members == 1 })
	tt.until("the mirror's PUNCH received", func() bool { return mr.m.Stats().Datagrams > 0 })
	return src, mr, st
}

// duePoller is a server's AF_XDP transport as busy polling makes it: a
// busy poll always due (Pending), beside what has Arrived; it counts
// receives.
type duePoller struct{ countingPeeker }

func (d *duePoller) Pending(time.Time) bool { return true }

// A server on a Loop receives its PUNCHes when they have arrived, not
// whenever a busy poll is due: thousands of idle turns cost its transport
// no receive (a PUNCH a second may come among them), and the mirror's
// PUNCH was still received (it gets datagrams).
func TestLoopServerReceivesOnlyArrivedPunches(t *testing.T) {
	var tr *duePoller
	src, mr, st := loopServer(t, func(scfg *replica.ServerConfig) {
		open := scfg.NewTransport
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			in, err := open(u)
			tr = &duePoller{countingPeeker{Transport: in}}
			return tr, err
		}
	})
	tt := turners{tb: t, loops: []*replica.LoopTurner{st}}
	src.push(1)
	tt.until("a record mirrored", func() bool { return mr.m.Stats().Next > 1 })
	before := tr.recvs.Load()
	const turns = 20000
	for range turns {
		st.Turn()
	}
	if n := tr.recvs.Load() - before; n > 2 {
		t.Fatalf("%d receives in %d idle turns: the server received whenever a busy poll was due", n, turns)
	}
}

// A server's turn that sends records reports work, so that a Loop's
// Adaptive phases start again after it (Idler.Busy); one with nothing new
// does not. Were a turn that sent what was there to report none, a Loop
// of servers alone would sleep on every idle turn once its yield phase
// had passed, however busy its rings.
func TestLoopServerSendIsWork(t *testing.T) {
	src, mr, st := loopServer(t, nil)
	tt := turners{tb: t, loops: []*replica.LoopTurner{st}}
	for seq := uint64(1); seq <= 50; seq++ {
		sent := src.srv.Stats().Records
		if err := src.pushSynth(seq); err != nil {
			t.Fatal(err)
		}
		if !st.Turn() {
			t.Fatalf("record %d: the turn that sent it reported no work", seq)
		}
		if got := src.srv.Stats().Records; got != sent+1 {
			t.Fatalf("record %d: the turn sent %d records, want 1", seq, got-sent)
		}
		if st.Turn() {
			t.Fatalf("record %d: a turn with nothing new reported work", seq)
		}
	}
	tt.until("50 records mirrored", func() bool { return mr.m.Stats().Next > 50 })
}
