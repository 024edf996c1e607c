package replica

import (
	"net/netip"
	"testing"
)

// lineBatch is a sender's batch: 48 datagrams to line A's group and 16
// to 4 unicast mirrors.
func lineBatch(gA netip.AddrPort, unis []netip.AddrPort) []Message {
	ms := make([]Message, 0, 64)
	buf := make([]byte, 1472)
	for i := range 64 {
		a := gA
		if i >= 48 {
			a = unis[i%len(unis)]
		}
		ms = append(ms, Message{Buf: buf, Addr: a})
	}
	return ms
}

// BenchmarkLineSender is a source's SendBatch over two lines (transports
// that take everything): the group's copies to line B's group.
//
//	go test -run '^$' -bench LineSender -count 5 ./replica
func BenchmarkLineSender(b *testing.B) {
	gA, gB := netip.MustParseAddrPort("239.255.0.1:7401"), netip.MustParseAddrPort("239.255.1.1:7501")
	unis := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:9000"), netip.MustParseAddrPort("10.0.0.2:9000"),
		netip.MustParseAddrPort("10.0.0.3:9000"), netip.MustParseAddrPort("10.0.0.4:9000")}
	l := &lineSender{a: &fakeLine{}, b: &fakeLine{}, groupA: gA, groupB: gB}
	ms := lineBatch(gA, unis)
	b.ReportAllocs()
	for b.Loop() {
		l.SendBatch(ms)
	}
}
