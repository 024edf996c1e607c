package replica_test

// Two unicast lines: a mirror that punches from both of its addresses and
// a source that sends to both (lines_unicast.go; lines_test.go has the
// harness).

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

const uniPort = 7600

// serveUnicast serves the source to unicast mirrors on both lines: line
// A's punches on uniPort, line B's on IfaceB:uniPort. Unkeyed, the TCP
// session runs on line A's network (line A's PUNCH must come from the
// session's peer); keyed, on the pair's own, and the seal ties line A.
func (tl *twoLines) serveUnicast(t *testing.T, keyed bool) *replica.Server {
	cfg := replica.ServerConfig{UDPPort: uniPort, Iface: tl.la.AAddr, IfaceB: tl.lb.AAddr}
	if keyed {
		cfg.Key, cfg.Encrypt = testKey(t, 1), true
	} else {
		cfg.Bind = netip.AddrPortFrom(tl.la.AAddr, 0).String()
	}
	return tl.src.serve(cfg)
}

// unicastCfg is a unicast mirror of both lines.
func (tl *twoLines) unicastCfg(t *testing.T, keyed bool) replica.MirrorConfig {
	cfg := replica.MirrorConfig{From: fromOldest, Unicast: true, IfaceB: tl.lb.BAddr}
	if keyed {
		// Line A's datagrams leave from another address than the TCP
		// session's (AnySource); the seal proves them the source's.
		cfg.Key, cfg.Encrypt, cfg.AnySource = testKey(t, 1), true, true
	}
	return cfg
}

// TestLinesUnicastFailover takes line A's link down mid-stream under a
// unicast mirror, brings it back, then takes line B's down: no NAK, no
// gap, identical rings; unkeyed, keyed (sealed PUNCHes on both lines,
// one replay window), and stepped by a Loop.
func TestLinesUnicastFailover(t *testing.T) {
	for _, c := range []struct {
		name        string
		keyed, loop bool
	}{{"plain", false, false}, {"keyed", true, false}, {"loop", false, true}} {
		t.Run(c.name, func(t *testing.T) { unicastFailover(t, c.keyed, c.loop) })
	}
}

func unicastFailover(t *testing.T, keyed, loop bool) {
	tl := newTwoLines(t)
	srv := tl.serveUnicast(t, keyed)
	var ev lineEvents
	cfg := tl.unicastCfg(t, keyed)
	cfg.Events = ev.add
	if loop {
		cfg.Loop = runLoop(t, tl.p.B, replica.WaitBlock)
	}
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	stop := make(chan struct{})
	last := pushing(tl.src, stop)
	bothDeliver(mr)
	down := tl.linkSet(t, tl.la.BIf, "down")
	if d := ev.wait(t, replica.MirrorLineDown, "A").Sub(down); d > 100*time.Millisecond {
		t.Errorf("line A down told after %v, want at most 100 ms", d)
	}
	recvB := mr.m.Stats().Lines[1].Received
	mr.waitStats("line B alone", 5*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[1].Received > recvB+300
	})
	tl.linkSet(t, tl.la.BIf, "up")
	ev.wait(t, replica.MirrorLineUp, "A")
	recvA := mr.m.Stats().Lines[0].Received
	mr.waitStats("line A used again", 5*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].Received > recvA+100
	})
	down = tl.linkSet(t, tl.lb.BIf, "down")
	if d := ev.wait(t, replica.MirrorLineDown, "B").Sub(down); d > 100*time.Millisecond {
		t.Errorf("line B down told after %v, want at most 100 ms", d)
	}
	recvA = mr.m.Stats().Lines[0].Received
	mr.waitStats("line A alone", 5*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].Received > recvA+300
	})
	close(stop)
	n := <-last
	st := tl.settle(t, mr, n, 10*time.Second)
	wantAll(t, st, n, "udp+udp unicast")
	oneConnection(t, st)
	if st.NaksSent != 0 {
		t.Errorf("%d NAKs while a line lived, want none", st.NaksSent)
	}
	if a, b := st.Lines[0], st.Lines[1]; a.Downs != 1 || a.Ups != 1 || b.Downs != 1 || !a.Up || b.Up {
		t.Errorf("line A %+v, line B %+v: want A down once and back, B down", a, b)
	}
	if keyed && (st.Replayed != 0 || st.BadAuth != 0 || st.Duplicates == 0) {
		t.Errorf("%d replayed, %d bad tags, %d duplicates: want the copies counted as duplicates only",
			st.Replayed, st.BadAuth, st.Duplicates)
	}
	ls, ok := srv.Lines()
	if !ok || ls.Datagrams[0] == 0 || ls.Datagrams[1] == 0 || ls.BadPunches != 0 {
		t.Errorf("source lines %+v (%v): want datagrams on both, no bad punch", ls, ok)
	}
	if sst := srv.Stats(); sst.BadPunches != 0 {
		t.Errorf("source refused %d punches of its mirror", sst.BadPunches)
	}
}

// TestLinesUnicastIndependentLoss loses about a tenth of the frames on
// each unicast line, independently: the mirror NAKs only what both lost.
func TestLinesUnicastIndependentLoss(t *testing.T) {
	tl := newTwoLines(t)
	tl.serveUnicast(t, false)
	cfg := tl.unicastCfg(t, false)
	ll := lossy(&cfg)
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	mr.waitStats("both lines deliver", 10*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].Received > 0 && st.Lines[1].Received > 0
	})
	const n = 20000
	tl.src.pushPaced(n, 20, 200*time.Microsecond)
	ll.check(t, tl.settle(t, mr, n, 20*time.Second), n)
}

// TestLinesUnicastBypass carries unicast lines over AF_XDP: line A, then
// both lines (each NIC its steering program and sockets, line B's
// PUNCHes received by its AF_XDP socket); line A's link down costs no
// NAK, and line A is used again once back.
func TestLinesUnicastBypass(t *testing.T) {
	for _, both := range []bool{false, true} {
		name := map[bool]string{false: "xdp+udp", true: "xdp+xdp"}[both]
		t.Run(name, func(t *testing.T) { unicastBypass(t, name, both) })
	}
}

func unicastBypass(t *testing.T, name string, both bool) {
	tl := newTwoLines(t)
	scfg := replica.ServerConfig{UDPPort: uniPort, Iface: tl.la.AAddr, IfaceB: tl.lb.AAddr,
		Bind: netip.AddrPortFrom(tl.la.AAddr, 0).String()}
	cfg := tl.unicastCfg(t, false)
	tl.xdpLines(&scfg, &cfg, both)
	srv := tl.src.serve(scfg)
	var ev lineEvents
	cfg.Events = ev.add
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	if got := srv.Stats().Transport; got != name {
		t.Fatalf("server transport %q, want %s", got, name)
	}
	stop := make(chan struct{})
	last := pushing(tl.src, stop)
	bothDeliver(mr)
	tl.linkSet(t, tl.la.BIf, "down")
	ev.wait(t, replica.MirrorLineDown, "A")
	recvB := mr.m.Stats().Lines[1].Received
	mr.waitStats("line B alone", 5*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[1].Received > recvB+300
	})
	tl.linkSet(t, tl.la.BIf, "up")
	ev.wait(t, replica.MirrorLineUp, "A")
	recvA := mr.m.Stats().Lines[0].Received
	mr.waitStats("AF_XDP line A used again", 5*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].Received > recvA+100
	})
	close(stop)
	n := <-last
	st := tl.settle(t, mr, n, 10*time.Second)
	wantAll(t, st, n, name+" unicast")
	oneConnection(t, st)
	if st.Lines[0].Name+"+"+st.Lines[1].Name != name || st.NaksSent != 0 {
		t.Errorf("lines %+v, %d NAKs: want %s, no NAK", st.Lines, st.NaksSent, name)
	}
}
