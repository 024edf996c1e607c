package replica_test

// Two lines at the edges: an old mirror of an A/B source, a link down on
// the source's side, kernel-bypass carriers (lines_test.go has the
// harness).

import (
	"bufio"
	"encoding/binary"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/transport"
)

// TestLinesOldMirror serves an A/B source to a mirror that does not
// announce HelloLines: it gets version-1 GEOMETRY and one MULTICAST, and
// mirrors over line A as today; one that does gets line B's MULTICAST.
func TestLinesOldMirror(t *testing.T) {
	tl := newTwoLines(t)
	srv := tl.serve()
	old := wire.HelloUDP | wire.HelloTelemetry | wire.HelloReportOnAsk | wire.HelloSession64 | wire.HelloHistory
	for _, hello := range []uint8{old, old | wire.HelloLines} {
		c := dialTCP(t, tl.p.B, srv.Addr().String())
		if _, err := c.Write(wire.AppendHello(nil, wire.StartNewest, wire.Hello{Flags: hello})); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		g, _ := readFrame(t, br)
		if g.Kind != wire.KindGeometry {
			t.Fatalf("GEOMETRY: %v", g)
		}
		lines := hello&wire.HelloLines != 0
		if got := g.Flags&wire.GeometryLines != 0; got != lines {
			t.Fatalf("HELLO %#x: GEOMETRY flags %#x, line B announced %v, want %v", hello, g.Flags, got, lines)
		}
		want := []wire.Kind{wire.KindMulticast, wire.KindSession}
		if lines {
			want = []wire.Kind{wire.KindMulticast, wire.KindMulticast, wire.KindSession}
		}
		for i, k := range want {
			h, p := readFrame(t, br)
			if h.Kind != k {
				t.Fatalf("HELLO %#x: frame %d is %v, want %v", hello, i, h.Kind, k)
			}
			if i == 1 && lines {
				mc, err := wire.ParseMulticast(p)
				if err != nil {
					t.Fatal(err)
				}
				from := netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, mc.Token)))
				if got := netip.AddrPortFrom(netip.AddrFrom4(mc.Group), mc.Port); got != groupB || from != tl.lb.AAddr {
					t.Fatalf("line B's MULTICAST %v from %v, want %v from %v", got, from, groupB, tl.lb.AAddr)
				}
			}
		}
		c.Close()
	}
	cfg := replica.MirrorConfig{From: fromOldest, AnySource: true} // today's mirror: no IfaceB
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	waitDatagrams(t, mr)
	tl.src.push(3000)
	tl.src.drained()
	mr.waitFor(3000, 10*time.Second)
	mr.close()
	st := mr.m.Stats()
	sameSlots(t, tl.src.path, mr.path, 1)
	wantAll(t, st, 3000, "udp multicast")
	if st.Lines != [2]replica.LineStats{} {
		t.Errorf("a one-line mirror counts lines: %+v", st.Lines)
	}
}

// finish ends a run of pushing (stop, last): it waits for the mirror to
// apply every record pushed, closes it, checks that the rings are
// identical and that every record came over transport, and returns the
// mirror's counters.
func (tl *twoLines) finish(t *testing.T, mr *mirror, stop chan struct{}, last <-chan uint64, transport string) replica.MirrorStats {
	t.Helper()
	close(stop)
	n := <-last
	st := tl.settle(t, mr, n, 10*time.Second)
	wantAll(t, st, n, transport)
	return st
}

// settle waits (up to timeout) for the mirror to apply the n records
// pushed, closes it, checks that the rings are identical and returns the
// mirror's counters.
func (tl *twoLines) settle(t *testing.T, mr *mirror, n uint64, timeout time.Duration) replica.MirrorStats {
	t.Helper()
	tl.src.drained()
	mr.waitFor(n, timeout)
	mr.close()
	st := mr.m.Stats()
	t.Logf("mirror %+v", st)
	sameSlots(t, tl.src.path, mr.path, 1)
	return st
}

// bothDeliver waits until each line delivered more than 100 datagrams.
func bothDeliver(mr *mirror) {
	mr.waitStats("both lines deliver", 10*time.Second, func(st replica.MirrorStats) bool {
		return st.Lines[0].Received > 100 && st.Lines[1].Received > 100
	})
}

// delivers waits until line (0: A, 1: B) delivered n datagrams more than
// it had.
func delivers(mr *mirror, line int, n uint64, what string) {
	from := mr.m.Stats().Lines[line].Received
	mr.waitStats(what, 5*time.Second, func(st replica.MirrorStats) bool { return st.Lines[line].Received > from+n })
}

// readFrame reads a whole frame.
func readFrame(t *testing.T, br *bufio.Reader) (wire.Header, []byte) {
	t.Helper()
	var hb [wire.HeaderSize]byte
	if _, err := io.ReadFull(br, hb[:]); err != nil {
		t.Fatal(err)
	}
	h, err := wire.ParseHeader(hb[:], 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, h.Len)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatal(err)
	}
	return h, p
}

// TestLinesSourceLinkDown takes line A's link down on the source's side:
// its sends fail or vanish, line B carries everything, and line A is used
// again once it is back. The datagrams carry the wide session's trailer.
func TestLinesSourceLinkDown(t *testing.T) {
	tl := newTwoLines(t)
	tl.serve(true)
	var ev lineEvents
	cfg := tl.mirrorCfg()
	cfg.Events = ev.add
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	stop := make(chan struct{})
	last := pushing(tl.src, stop)
	bothDeliver(mr)
	if _, err := tl.p.A.Exec("ip", "link", "set", tl.la.AIf, "down"); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, replica.MirrorLineDown, "A")
	if _, err := tl.p.A.Exec("ip", "link", "set", tl.la.AIf, "up"); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, replica.MirrorLineUp, "A")
	delivers(mr, 0, 100, "line A used again")
	st := tl.finish(t, mr, stop, last, "udp+udp multicast")
	if st.NaksSent != 0 {
		t.Errorf("%d NAKs while line B lived, want none", st.NaksSent)
	}
	ls, ok := tl.src.srv.Lines()
	t.Logf("source lines %+v", ls)
	if !ok || ls.Name != [2]string{"udp", "udp"} || ls.Datagrams[0] == 0 || ls.Datagrams[1] < ls.Datagrams[0] {
		t.Errorf("source lines %+v (%v): want both counted, line B at least line A's", ls, ok)
	}
}

// TestLinesBypassTransports carries line A over AF_XDP at both ends and
// line B over kernel UDP ("xdp+udp"), or AF_XDP on both NICs of each
// process, one mirror loop polling both ("xdp+xdp"): the mirror reports
// each line's transport and takes every record; with line A's link down,
// line B carries them all, and line A is used again once its link is back
// up.
func TestLinesBypassTransports(t *testing.T) {
	for _, both := range []bool{false, true} {
		name := map[bool]string{false: "xdp+udp", true: "xdp+xdp"}[both]
		t.Run(name, func(t *testing.T) { bypassLines(t, name, both) })
	}
}

// xdpLines carries line A over AF_XDP at both ends (each end's NIC its
// steering program and sockets), and line B too when both is set.
func (tl *twoLines) xdpLines(scfg *replica.ServerConfig, cfg *replica.MirrorConfig, both bool) {
	xdpOn := func(ifn string) (func(replica.UDPConfig) (replica.Transport, error), func(replica.DatagramSpec) (replica.Transport, error)) {
		base := transport.XDPConfig{Iface: ifn, Mode: bpf.ModeNative}
		return func(u replica.UDPConfig) (replica.Transport, error) { return newXDP(transport.XDPForServer(base, u)) },
			func(s replica.DatagramSpec) (replica.Transport, error) {
				return newXDP(transport.XDPForMirror(base, s))
			}
	}
	scfg.NewTransport, _ = xdpOn(tl.la.AIf)
	_, cfg.NewTransport = xdpOn(tl.la.BIf)
	if both {
		scfg.NewTransportB, _ = xdpOn(tl.lb.AIf)
		_, cfg.NewTransportB = xdpOn(tl.lb.BIf)
	}
}

func bypassLines(t *testing.T, name string, both bool) {
	tl := newTwoLines(t)
	scfg := replica.ServerConfig{Multicast: mcastGroup(), Iface: tl.la.AAddr, MulticastB: groupB, IfaceB: tl.lb.AAddr}
	cfg := tl.mirrorCfg()
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
	delivers(mr, 1, 300, "line B alone")
	tl.linkSet(t, tl.la.BIf, "up")
	ev.wait(t, replica.MirrorLineUp, "A")
	delivers(mr, 0, 100, "AF_XDP line A used again")
	st := tl.finish(t, mr, stop, last, name+" multicast")
	if st.Lines[0].Name+"+"+st.Lines[1].Name != name || st.NaksSent != 0 {
		t.Errorf("lines %+v, %d NAKs: want %s, no NAK", st.Lines, st.NaksSent, name)
	}
}

// TestLinesKeyed serves both lines under a key, encrypted: the mirror's
// one replay window takes the first copy of each datagram (the other
// counts as a duplicate, not a replay), line A's link down costs no NAK,
// and the rings are identical.
func TestLinesKeyed(t *testing.T) {
	tl := newTwoLines(t)
	tl.src.serve(replica.ServerConfig{Multicast: mcastGroup(), Iface: tl.la.AAddr, MulticastB: groupB, IfaceB: tl.lb.AAddr,
		Key: testKey(t, 1), Encrypt: true})
	var ev lineEvents
	cfg := tl.mirrorCfg()
	cfg.Events, cfg.Key, cfg.Encrypt = ev.add, testKey(t, 1), true
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	stop := make(chan struct{})
	last := pushing(tl.src, stop)
	bothDeliver(mr)
	tl.linkSet(t, tl.la.BIf, "down")
	ev.wait(t, replica.MirrorLineDown, "A")
	delivers(mr, 1, 300, "line B alone")
	st := tl.finish(t, mr, stop, last, "udp+udp multicast")
	if st.NaksSent != 0 || st.Replayed != 0 || st.BadAuth != 0 || st.Duplicates == 0 {
		t.Errorf("%d NAKs, %d replayed, %d bad tags, %d duplicates: want the copies counted as duplicates only",
			st.NaksSent, st.Replayed, st.BadAuth, st.Duplicates)
	}
}
