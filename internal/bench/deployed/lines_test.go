package deployed

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// The frames both forwarders dropped are counted once each, a frame B
// dropped twice (a resend) too.
func TestBothDropped(t *testing.T) {
	for _, c := range []struct {
		a, b []uint64
		want uint64
	}{
		{nil, []uint64{1}, 0},
		{[]uint64{1, 5, 9, 40}, []uint64{2, 5, 40, 41}, 2},
		{[]uint64{7}, []uint64{7, 7}, 1},
	} {
		if got := bothDropped(c.a, c.b); got != c.want {
			t.Errorf("bothDropped(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// A line's series is found whichever order its labels come in.
func TestLineSeries(t *testing.T) {
	m := parseMetrics("ringfire_local_mirror_line_first_total{line=\"A\",ring=\"Y01-mirror\"} 12\n" +
		"ringfire_local_mirror_line_first_total{ring=\"Y01-mirror\",line=\"B\"} 3\n")
	if a, b := lineSeries(m, "ringfire_local_mirror_line_first_total", "Y01-mirror", "A"),
		lineSeries(m, "ringfire_local_mirror_line_first_total", "Y01-mirror", "B"); a != 12 || b != 3 {
		t.Errorf("line A %v, line B %v; want 12 and 3", a, b)
	}
}

// Two lines' run files give serve each line's group, interface and AF_XDP
// socket, and the mirror both interfaces; one line's, line A only.
func TestLinesRunTables(t *testing.T) {
	a := lineEnd{src: netip.MustParseAddr("10.90.0.1"), dst: netip.MustParseAddr("10.90.0.2"), srcIf: "vla", dstIf: "vra"}
	b := lineEnd{src: netip.MustParseAddr("10.91.0.1"), dst: netip.MustParseAddr("10.91.0.2"), srcIf: "vlb", dstIf: "vrb"}
	two := newLinesHop("/dev/shm/x", "Y", "xdp-multicast", "yield", a, b, true)
	for _, want := range []string{`multicast = "239.255.8.1:8350"`, `iface = "10.90.0.1"`, `xdp = "vla"`, `require-xdp = true`,
		`multicast-b = "239.255.8.2:8352"`, `iface-b = "10.91.0.1"`, `xdp-b = "vlb"`, `wait = "yield"`} {
		if !strings.Contains(two.serveTable(), want+"\n") {
			t.Errorf("serve table lacks %s:\n%s", want, two.serveTable())
		}
	}
	for _, want := range []string{`source = "10.90.0.1:8300"`, `iface = "10.90.0.2"`, `xdp = "vra"`, `iface-b = "10.91.0.2"`, `xdp-b = "vrb"`} {
		if !strings.Contains(two.mirrorTable(), want+"\n") {
			t.Errorf("mirror table lacks %s:\n%s", want, two.mirrorTable())
		}
	}
	oneA := two
	oneA.oneA = true
	if !strings.Contains(oneA.serveTable(), "multicast-b") || strings.Contains(oneA.mirrorTable(), "-b =") {
		t.Errorf("line A of two: the serve sends on both, the mirror takes A only:\n%s%s", oneA.serveTable(), oneA.mirrorTable())
	}
	one := newLinesHop("/dev/shm/x", "Y", "udp-multicast", "default", a, b, false)
	for _, table := range []string{one.serveTable(), one.mirrorTable()} {
		if strings.Contains(table, "-b =") || strings.Contains(table, "xdp") || strings.Contains(table, "wait") {
			t.Errorf("one line over kernel UDP, default wait: %s", table)
		}
	}
}

// The cases: A direct, both direct, A alone through its forwarder, then
// both lines clean, B then A delayed, both lossy, each with its fault.
func TestLinesCases(t *testing.T) {
	lc := LinesConfig{}
	lc.Defaults()
	cs := linesCases(lc)
	want := []string{report.LinesDirect, report.LinesDirect2, report.LinesA, report.LinesAOfAB, report.LinesAB, report.LinesBSlow, report.LinesASlow, report.LinesLossy}
	if len(cs) != len(want) {
		t.Fatalf("%d cases, want %d", len(cs), len(want))
	}
	for i, c := range cs {
		if c.name != want[i] || c.two != (i != 0 && i != 2) || c.direct != (i < 2) || c.oneA != (i == 3) {
			t.Errorf("case %d: %+v, want %s", i, c, want[i])
		}
	}
	if cs[5].delayB != 200*time.Microsecond || cs[6].delayA != 200*time.Microsecond || cs[7].lossA != 0.1 || cs[7].lossB != 0.1 {
		t.Errorf("faults: B delayed %v, A delayed %v, losses %v %v", cs[5].delayB, cs[6].delayA, cs[7].lossA, cs[7].lossB)
	}
}
