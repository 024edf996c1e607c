package replica

import (
	"errors"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// sendLine is a Transport whose SendBatch takes at most take datagrams
// (negative: all) and then fails with err.
type sendLine struct {
	fakeLine
	take int
	err  error
	got  []netip.AddrPort
}

func (s *sendLine) SendBatch(ms []Message) (int, error) {
	n := len(ms)
	if s.take >= 0 && s.take < n {
		n = s.take
	}
	for _, m := range ms[:n] {
		s.got = append(s.got, m.Addr)
	}
	if n < len(ms) || s.err != nil && s.take < 0 {
		return n, s.err
	}
	return n, nil
}

// Line B gets every group datagram whatever line A did, with line B's
// group, and no unicast one; a line A that failed while line B carried
// the batch counts as sent, except a datagram too large for the MTU.
func TestLineSender(t *testing.T) {
	gA, gB := netip.MustParseAddrPort("239.255.0.1:7401"), netip.MustParseAddrPort("239.255.1.1:7501")
	uni := netip.MustParseAddrPort("10.0.0.9:9000")
	batch := []Message{{Buf: []byte{1}, Addr: gA}, {Buf: []byte{2}, Addr: gA}, {Buf: []byte{3}, Addr: gA}}
	for _, c := range []struct {
		name   string
		take   int
		err    error
		wantN  int
		wantEr error
	}{
		{"both send", -1, nil, 3, nil},
		{"A down", 0, unix.ENETDOWN, 3, nil},
		{"A full", 1, ErrWouldBlock, 3, nil},
		{"A too large", 0, unix.EMSGSIZE, 0, unix.EMSGSIZE},
	} {
		a, b := &sendLine{take: c.take, err: c.err}, &sendLine{take: -1}
		l := &lineSender{a: a, b: b, groupA: gA, groupB: gB}
		n, err := l.SendBatch(batch)
		if n != c.wantN || !errors.Is(err, c.wantEr) || (c.wantEr == nil && err != nil) {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, n, err, c.wantN, c.wantEr)
		}
		if len(b.got) != 3 || b.got[0] != gB {
			t.Errorf("%s: line B sent %v, want the 3 datagrams to %v", c.name, b.got, gB)
		}
	}
	a, b := &sendLine{take: -1}, &sendLine{take: -1}
	l := &lineSender{a: a, b: b, groupA: gA, groupB: gB}
	mixed := []Message{{Buf: []byte{1}, Addr: gA}, {Buf: []byte{1}, Addr: uni}}
	if n, err := l.SendBatch(mixed); n != 2 || err != nil || len(b.got) != 1 || len(a.got) != 2 {
		t.Fatalf("mixed batch: %d %v, A %v, B %v", n, err, a.got, b.got)
	}
	a.got, b.got = a.got[:0:cap(a.got)], b.got[:0:cap(b.got)]
	if allocs := testing.AllocsPerRun(100, func() {
		a.got, b.got = a.got[:0], b.got[:0]
		l.SendBatch(mixed)
	}); allocs != 0 {
		t.Errorf("SendBatch allocates %v per call", allocs)
	}
}
