package replica

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// A hole waits the arbitration window before its NAK: the other line may
// fill it; one the other line fills is never NAKed.
func TestSequencerLineWindow(t *testing.T) {
	s, k, st := newSQ(t, 1)
	s.window = time.Millisecond
	t0 := time.Now()
	sqData(t, s, 1, 4, false)
	sqData(t, s, 9, 4, false) // 5..8 missing on this line
	if _, _, ok := s.wantNak(t0); ok {
		t.Fatal("NAK inside the window")
	}
	if _, _, ok := s.wantNak(t0.Add(900 * time.Microsecond)); ok {
		t.Fatal("NAK inside the window")
	}
	sqData(t, s, 5, 4, false) // the other line's copy
	sqData(t, s, 9, 4, false) // and its copy of the held frame
	sqWant(t, k, 1, 12)
	if _, _, ok := s.wantNak(t0.Add(5 * time.Millisecond)); ok || st.NaksSent != 0 || st.Duplicates != 1 {
		t.Fatalf("filled hole: NAK %v, stats %+v", ok, st)
	}
	sqData(t, s, 17, 4, false) // 13..16 lost on both lines
	t1 := t0.Add(10 * time.Millisecond)
	if _, _, ok := s.wantNak(t1); ok {
		t.Fatal("NAK of a new hole inside its window")
	}
	if left := s.windowLeft(t1.Add(400 * time.Microsecond)); left != 600*time.Microsecond {
		t.Fatalf("window left %v, want 600µs: the loop must wake for the NAK", left)
	}
	first, last, ok := s.wantNak(t1.Add(time.Millisecond))
	if !ok || first != 13 || last != 16 {
		t.Fatalf("NAK after the window: %v %d..%d, want 13..16", ok, first, last)
	}
	if left := s.windowLeft(t1.Add(2 * time.Millisecond)); left < time.Minute {
		t.Fatalf("window left %v with the NAK out: the loop would spin", left)
	}
}

// fakeLine is a Transport that returns queued datagrams.
type fakeLine struct {
	q      []Message
	closed bool
}

func (f *fakeLine) SendBatch(ms []Message) (int, error) { return len(ms), nil }
func (f *fakeLine) RecvBatch(ms []Message, _ time.Duration) (int, error) {
	n := copy(ms, f.q)
	for i := range n {
		ms[i].Buf = append(ms[i].Buf[:0], f.q[i].Buf...)
	}
	f.q = f.q[n:]
	return n, nil
}
func (f *fakeLine) LocalAddr() netip.AddrPort { return netip.AddrPort{} }
func (f *fakeLine) Close() error              { f.closed = true; return nil }

var (
	lineSrcA = netip.MustParseAddrPort("10.0.0.1:7401")
	lineSrcB = netip.MustParseAddr("10.1.0.1")
)

func (f *fakeLine) frame(from netip.Addr, seq uint64) {
	b := wire.Header{Kind: wire.KindData, Flags: 1, Count: 1, Seq: seq}
	buf := make([]byte, wire.HeaderSize)
	b.Put(buf)
	f.q = append(f.q, Message{Buf: buf, N: len(buf), Addr: netip.AddrPortFrom(from, 7401)})
}

func recvAll(t *testing.T, l Transport) []Message {
	t.Helper()
	ms := make([]Message, 64)
	for i := range ms {
		ms[i].Buf = make([]byte, 64)
	}
	n, err := l.RecvBatch(ms, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ms[:n]
}

// The first copy of a frame is counted first for its line, the other late
// (by how much), one only a line delivered lost for the other; line B's
// datagrams are taken as the source's only from the address it announced.
func TestLineRecvArbitration(t *testing.T) {
	a, b := &fakeLine{}, &fakeLine{}
	var st [2]LineStats
	var evs []string
	l := newLineRecv(a, b, lineSrcA, lineSrcB, &st, func(i int, up bool) {
		evs = append(evs, string(rune('A'+i)), map[bool]string{true: "up", false: "down"}[up])
	})
	a.frame(lineSrcA.Addr(), 1)
	a.frame(lineSrcA.Addr(), 2)
	b.frame(lineSrcB, 1)
	b.frame(lineSrcB, 3)
	b.frame(netip.MustParseAddr("10.9.9.9"), 4) // not the source's line B address
	got := recvAll(t, l)
	if len(got) != 5 {
		t.Fatalf("received %d, want 5", len(got))
	}
	for _, m := range got[:4] {
		if m.Addr != lineSrcA {
			t.Errorf("datagram from %v, want the source's %v", m.Addr, lineSrcA)
		}
	}
	if got[4].Addr.Addr() != netip.MustParseAddr("10.9.9.9") {
		t.Errorf("a foreign datagram on line B became the source's: %v", got[4].Addr)
	}
	if st[0].First != 2 || st[1].First != 2 || st[1].Late != 1 || st[1].LateBy[0]+st[1].LateBy[1] != 1 || st[0].Received != 2 || st[1].Received != 3 {
		t.Fatalf("A %+v, B %+v", st[0], st[1])
	}
	// Past LineDark: line A's lost frames (3, 4) and line B's (2) are
	// counted, and line A, silent while B delivered, went dark.
	l.(*lineRecv).epoch = time.Now().Add(-time.Second) // the clock moves on 1 s
	b.frame(lineSrcB, 5)
	recvAll(t, l)
	if st[0].Lost != 2 || st[1].Lost != 1 || st[0].Up || st[0].Downs != 1 {
		t.Fatalf("after LineDark: A %+v, B %+v", st[0], st[1])
	}
	a.frame(lineSrcA.Addr(), 5)
	recvAll(t, l)
	if !st[0].Up || st[0].Ups != 1 || st[0].Late != 1 || st[0].LateBy[LateBuckets-1] != 0 {
		t.Fatalf("line A back: %+v", st[0])
	}
	if want := []string{"A", "down", "A", "up"}; len(evs) != 4 || evs[0] != want[0] || evs[1] != want[1] || evs[3] != want[3] {
		t.Fatalf("events %v, want %v", evs, want)
	}
	if l.Close(); !a.closed || !b.closed {
		t.Fatal("Close left a line open")
	}
}

// BenchmarkLineRecv is a mirror's receive over two lines: each frame
// comes on both, one op is one frame's two copies (arbitration and
// counting, with fake lines). It allocates nothing.
//
//	go test -run '^$' -bench LineRecv -benchmem -count 5 ./replica
func BenchmarkLineRecv(b *testing.B) {
	a, c := &fakeLine{}, &fakeLine{}
	var st [2]LineStats
	l := newLineRecv(a, c, lineSrcA, lineSrcB, &st, func(int, bool) {})
	ms := make([]Message, 2)
	qa, qc := make([]Message, 1), make([]Message, 1)
	for i := range 2 {
		ms[i].Buf = make([]byte, 64)
	}
	buf := make([]byte, wire.HeaderSize)
	b.ReportAllocs()
	for i := range b.N {
		wire.Header{Kind: wire.KindData, Flags: 1, Count: 1, Seq: uint64(i) + 1}.Put(buf)
		qa[0] = Message{Buf: buf, N: len(buf), Addr: lineSrcA}
		qc[0] = Message{Buf: buf, N: len(buf), Addr: netip.AddrPortFrom(lineSrcB, 7401)}
		a.q, c.q = qa, qc
		if n, err := l.RecvBatch(ms, 0); n != 2 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// heartbeat queues an idle source's heartbeat (last sent seq) on f.
func (f *fakeLine) heartbeat(from netip.Addr, seq uint64) {
	buf := make([]byte, wire.HeaderSize)
	wire.Header{Kind: wire.KindHeartbeat, Flags: 1, Seq: seq}.Put(buf)
	f.q = append(f.q, Message{Buf: buf, N: len(buf), Addr: netip.AddrPortFrom(from, 7401)})
}

// An idle source heartbeats the same sequence on both lines every 128 ms,
// in either order: no line goes dark for coming second; a line whose
// heartbeats stop goes dark at the other's next one.
func TestLineRecvIdleHeartbeats(t *testing.T) {
	a, b := &fakeLine{}, &fakeLine{}
	var st [2]LineStats
	var evs []string
	l := newLineRecv(a, b, lineSrcA, lineSrcB, &st, func(i int, up bool) {
		evs = append(evs, fmt.Sprintf("%c %v", 'A'+i, up))
	}).(*lineRecv)
	tick := func() { l.epoch = l.epoch.Add(-128 * time.Millisecond) } // 128 ms pass
	for round := range 6 {
		tick()
		first, second := a, b
		fa, fb := lineSrcA.Addr(), lineSrcB
		if round%2 == 1 { // line B's copy comes first this time
			first, second, fa, fb = b, a, fb, fa
		}
		first.heartbeat(fa, 9)
		recvAll(t, l)
		second.heartbeat(fb, 9)
		recvAll(t, l)
	}
	if len(evs) != 0 || st[0].Downs+st[1].Downs != 0 {
		t.Fatalf("healthy idle lines went dark: %v", evs)
	}
	tick()
	b.heartbeat(lineSrcB, 9) // line A's never comes again
	recvAll(t, l)
	tick()
	b.heartbeat(lineSrcB, 9)
	recvAll(t, l)
	if len(evs) != 1 || evs[0] != "A false" || st[0].Downs != 1 {
		t.Fatalf("events %v, line A %+v: want A down once", evs, st[0])
	}
}

// failLine is a line whose receives fail.
type failLine struct {
	fakeLine
	err error
}

func (f *failLine) RecvBatch([]Message, time.Duration) (int, error) { return 0, f.err }

// A line whose receive fails is counted and skipped while the other
// delivers; both failing ends the receive.
func TestLineRecvErrors(t *testing.T) {
	a, b := &fakeLine{}, &failLine{err: errors.New("ENETDOWN")}
	var st [2]LineStats
	l := newLineRecv(a, b, lineSrcA, lineSrcB, &st, func(int, bool) {})
	a.frame(lineSrcA.Addr(), 1)
	if got := recvAll(t, l); len(got) != 1 || st[1].Errors != 1 {
		t.Fatalf("received %d, line B %+v: want A's datagram and B's error counted", len(got), st[1])
	}
	l2 := newLineRecv(&failLine{err: ErrClosed}, &failLine{err: ErrClosed}, lineSrcA, lineSrcB, &st, func(int, bool) {})
	if _, err := l2.RecvBatch(make([]Message, 4), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("both lines closed: %v, want ErrClosed", err)
	}
}
