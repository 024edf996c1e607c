package deployed

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/netns"
)

// A lines measurement's ringfire run files: run 1 (N1) serves one ring on
// line A, and on line B when there is one (serve --multicast-b), run 2
// (N2) mirrors it from both (mirror --iface-b).

// lineEnd is one line as serve and mirror see it.
type lineEnd struct {
	group        netip.AddrPort // the line's multicast group
	src, dst     netip.Addr     // the serve's and the mirror's address on it
	srcIf, dstIf string         // their interfaces
}

// linesHop is one ring served on one or two lines.
type linesHop struct {
	h     ringsHop // the ring's names (one ring) and the session's bind
	a, b  lineEnd
	two   bool // line B too
	oneA  bool // with two: the mirror takes line A only
	xdp   bool
	wait  string
	ports ringsPorts
}

// linesPorts are the lines section's TCP bind and first UDP (group) port.
var linesPorts = ringsPorts{8300, 8350}

// linesGroups are the groups of line A and line B.
var linesGroups = [2][4]byte{{239, 255, 8, 1}, {239, 255, 8, 2}}

// newLinesHop is a ring named prefix in dir on line a (and b, when two),
// over tr (xdp-multicast or udp-multicast) waiting as wait.
func newLinesHop(dir, prefix, tr, wait string, a, b lineEnd, two bool) linesHop {
	a.group = netip.AddrPortFrom(netip.AddrFrom4(linesGroups[0]), uint16(linesPorts.udp))
	b.group = netip.AddrPortFrom(netip.AddrFrom4(linesGroups[1]), uint16(linesPorts.udp+2))
	return linesHop{h: ringsHop{prefix: prefix, dir: dir, src: a.src, dst: a.dst, ports: linesPorts, wait: wait, n: 1},
		a: a, b: b, two: two, xdp: strings.HasPrefix(tr, "xdp-"), wait: wait, ports: linesPorts}
}

// serveTable is run 1's [[serve]] table.
func (lh linesHop) serveTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n[[serve]]\nring = %q\nbind = %q\nmulticast = %q\niface = %q\n", lh.h.ring(0), lh.h.bind(0), lh.a.group, lh.a.src)
	if lh.xdp {
		fmt.Fprintf(&b, "xdp = %q\nrequire-xdp = true\n", lh.a.srcIf)
	}
	if lh.two {
		fmt.Fprintf(&b, "multicast-b = %q\niface-b = %q\n", lh.b.group, lh.b.src)
		if lh.xdp {
			fmt.Fprintf(&b, "xdp-b = %q\n", lh.b.srcIf)
		}
	}
	b.WriteString(waitKey(lh.wait))
	return b.String()
}

// mirrorTable is run 2's [[mirror]] table.
func (lh linesHop) mirrorTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n[[mirror]]\nsource = %q\nring = %q\nfrom = \"oldest\"\niface = %q\nreconnect-ms = 50\n", lh.h.bind(0), lh.h.copy(0), lh.a.dst)
	if lh.xdp {
		fmt.Fprintf(&b, "xdp = %q\nrequire-xdp = true\n", lh.a.dstIf)
	}
	if lh.two && !lh.oneA {
		fmt.Fprintf(&b, "iface-b = %q\n", lh.b.dst)
		if lh.xdp {
			fmt.Fprintf(&b, "xdp-b = %q\n", lh.b.dstIf)
		}
	}
	b.WriteString(waitKey(lh.wait))
	return b.String()
}

// linesMetricsPort is where each run process serves its metrics, on its
// namespace's address of veth0.
const linesMetricsPort = 9475

// startLinesRuns writes the two run files and starts run 1 (N1) and
// run 2 (N2), and waits until both are ready.
func (ps *procSet) startLinesRuns(d *deployedNet, dir string, lh linesHop) (run1, run2 *ringsRun, err error) {
	p := d.pair
	files := [2]string{
		fmt.Sprintf("# ringfire-bench, lines section\nmetrics = %q\n%s", netip.AddrPortFrom(p.AAddr, linesMetricsPort), lh.serveTable()),
		fmt.Sprintf("# ringfire-bench, lines section\nmetrics = %q\n%s", netip.AddrPortFrom(p.BAddr, linesMetricsPort), lh.mirrorTable()),
	}
	ends := [2]struct {
		role string
		l    *proc.Launcher
		ns   *netns.NS
		addr netip.Addr
	}{{report.RoleRun1, d.n1, p.A, p.AAddr}, {report.RoleRun2, d.n2, p.B, p.BAddr}}
	var runs [2]*ringsRun
	for i, e := range ends {
		file := filepath.Join(dir, fmt.Sprintf("lines-%d.toml", i+1))
		if err := os.WriteFile(file, []byte(files[i]), 0o644); err != nil {
			return nil, nil, err
		}
		pr, err := ps.start(e.l, e.role, []string{d.ringfire, "run", file}, nil, false)
		if err != nil {
			return nil, nil, err
		}
		runs[i] = &ringsRun{p: pr, ns: e.ns, metrics: netip.AddrPortFrom(e.addr, linesMetricsPort).String()}
	}
	for _, rr := range runs {
		if err := rr.ready(); err != nil {
			return nil, nil, ps.explain(err)
		}
	}
	return runs[0], runs[1], nil
}
