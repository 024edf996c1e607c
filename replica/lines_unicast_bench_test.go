package replica

import (
	"net/netip"
	"testing"
)

// BenchmarkLineSenderUnicast is BenchmarkLineSender with a unicast line
// B: the 4 mirrors' datagrams copied to their line B addresses too.
func BenchmarkLineSenderUnicast(b *testing.B) {
	gA, gB := netip.MustParseAddrPort("239.255.0.1:7401"), netip.MustParseAddrPort("239.255.1.1:7501")
	unis := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:9000"), netip.MustParseAddrPort("10.0.0.2:9000"),
		netip.MustParseAddrPort("10.0.0.3:9000"), netip.MustParseAddrPort("10.0.0.4:9000")}
	u := newLineUni(netip.MustParseAddrPort("10.1.0.5:7600"))
	r := map[netip.AddrPort]netip.AddrPort{}
	for i, a := range unis {
		r[a] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i + 1)}), 9000)
	}
	u.routes.Store(&r)
	l := &lineSender{a: &fakeLine{}, b: &fakeLine{}, groupA: gA, groupB: gB, uni: u}
	ms := lineBatch(gA, unis)
	b.ReportAllocs()
	for b.Loop() {
		l.SendBatch(ms)
	}
}
