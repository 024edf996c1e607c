package deployed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/netns"
)

// The rings section: N rings served and mirrored by
// one `ringfire run` process on each side over AF_XDP unicast, in the
// deployed section's topology (two namespaces, veth0 carrying N1 → N2 and
// veth1 N2 → N1). Each ring count is measured in two phases, each with a
// pair of run processes of its own:
//
//	zero-loss   run 1 (N1) serves L01..LN on veth0, run 2 (N2) mirrors
//	            them; this process writes all N rings at once, the
//	            aggregate rate split evenly, at each rate of the sweep.
//	round trip  pinger (N1) → Ai → run 1 → Ai' → echo (N2) → Bi → run 2 →
//	            Bi' → pinger, for every ring i at once: one pinger and one
//	            echo process handle all N rings, one record in flight per
//	            ring, so that N rings add rings, not processes.

// RingsTransport is the transport of the rings section.
const RingsTransport = "xdp-unicast"

// MaxRings bounds a ring count of the section (the port ranges below).
const MaxRings = 50

// DefaultRingsWaits are the wait modes of the run processes' serves and
// mirrors the section measures by default: yield, the mode for hosts where
// busy threads outnumber cores (two per ring and side here).
var DefaultRingsWaits = []string{"yield"}

// ringsPorts are the first TCP (bind) and UDP ports of a set of rings;
// ring i takes the first + i.
type ringsPorts struct{ tcp, udp int }

var (
	portsA = ringsPorts{7800, 7850} // round trip, N1 → N2
	portsB = ringsPorts{8000, 8050} // round trip, N2 → N1
	portsL = ringsPorts{7900, 7950} // zero-loss, N1 → N2
)

// ringsMetricsPort is where each run process serves its metrics, on its
// namespace's address of veth0.
const ringsMetricsPort = 9470

// ringsHop is n rings served from one namespace and mirrored into the
// other over one link, by whichever run processes the files name.
type ringsHop struct {
	prefix   string // ring names: prefix and index, "A01"
	dir      string
	src, dst netip.Addr // the serve's and the mirror's addresses
	ifname   string     // the link's interface, in both namespaces
	ports    ringsPorts
	wait     string // a bench wait name: "default" sets no key
	n        int
	udp      bool // kernel UDP unicast (the deployed section's loop waits), not AF_XDP
}

// xdpKeys are a table's AF_XDP keys: the link's interface, and no silent
// fallback to kernel UDP (none for a hop over kernel UDP).
func (h ringsHop) xdpKeys() string {
	if h.udp {
		return ""
	}
	return fmt.Sprintf("xdp = %q\nrequire-xdp = true\n", h.ifname)
}

func (h ringsHop) name(i int) string { return fmt.Sprintf("%s%02d", h.prefix, i+1) }
func (h ringsHop) ring(i int) string { return filepath.Join(h.dir, h.name(i)) }

// copyName is the mirror ring's name (its base name, as run labels it).
func (h ringsHop) copyName(i int) string { return h.name(i) + "-mirror" }
func (h ringsHop) copy(i int) string     { return filepath.Join(h.dir, h.copyName(i)) }

func (h ringsHop) bind(i int) netip.AddrPort {
	return netip.AddrPortFrom(h.src, uint16(h.ports.tcp+i))
}

func (h ringsHop) rings() []string {
	ps := make([]string, h.n)
	for i := range ps {
		ps[i] = h.ring(i)
	}
	return ps
}

func (h ringsHop) copies() []string {
	ps := make([]string, h.n)
	for i := range ps {
		ps[i] = h.copy(i)
	}
	return ps
}

// waitKey is a table's wait key for a bench wait name (none for a loop's:
// loopKey sets the loop's).
func waitKey(wait string) string {
	if _, _, loop := report.LoopWait(wait); wait == "default" || loop {
		return ""
	}
	return fmt.Sprintf("wait = %q\n", wait)
}

// loopKey is the top-level loop keys for a bench wait name ("" for one
// that is not a loop's).
func loopKey(wait string) string {
	n, mode, ok := report.LoopWait(wait)
	if !ok {
		return ""
	}
	return fmt.Sprintf("loop = %q\nloops = %d\n", mode, n)
}

// serves writes h's [[serve]] tables.
func (h ringsHop) serves(b *strings.Builder) {
	for i := range h.n {
		fmt.Fprintf(b, "\n[[serve]]\nring = %q\nbind = %q\nudp = %d\niface = %q\n%s%s",
			h.ring(i), h.bind(i), h.ports.udp+i, h.src, h.xdpKeys(), waitKey(h.wait))
	}
}

// mirrors writes h's [[mirror]] tables.
func (h ringsHop) mirrors(b *strings.Builder) {
	for i := range h.n {
		fmt.Fprintf(b, "\n[[mirror]]\nsource = %q\nring = %q\nfrom = \"oldest\"\nunicast = true\niface = %q\n%sreconnect-ms = 50\n%s",
			h.bind(i), h.copy(i), h.dst, h.xdpKeys(), waitKey(h.wait))
	}
}

// runFile is a ringfire run file serving the rings of serves and
// mirroring those of mirrors, with its metrics on metrics.
func runFile(metrics netip.AddrPort, serves, mirrors []ringsHop) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ringfire-bench, rings section\nmetrics = %q\n", metrics)
	if hs := append(slices.Clip(serves), mirrors...); len(hs) > 0 {
		b.WriteString(loopKey(hs[0].wait)) // one process, one wait name
	}
	for _, h := range serves {
		h.serves(&b)
	}
	for _, h := range mirrors {
		h.mirrors(&b)
	}
	return b.String()
}

// ringsRun is a ringfire run process of the section.
type ringsRun struct {
	p       *proc.Proc
	ns      *netns.NS
	metrics string // ADDR:PORT in ns
}

// startRun writes file and starts ringfire run on it from l (in ns).
func (ps *procSet) startRun(d *deployedNet, l *proc.Launcher, ns *netns.NS, role, file string, metrics netip.AddrPort, serves, mirrors []ringsHop) (*ringsRun, error) {
	if err := os.WriteFile(file, []byte(runFile(metrics, serves, mirrors)), 0o644); err != nil {
		return nil, err
	}
	p, err := ps.start(l, role, []string{d.ringfire, "run", file}, nil, false)
	if err != nil {
		return nil, err
	}
	return &ringsRun{p: p, ns: ns, metrics: metrics.String()}, nil
}

// ready waits (bounded by readyWait) for the process's /readyz: every
// serve listens and every mirror has connected once.
func (rr *ringsRun) ready() error {
	var (
		code        int
		body        []byte
		err, exited error
	)
	if pace.Until(readyWait, "/readyz", func() bool {
		code, body, err = httpIn(rr.ns, rr.metrics, "/readyz")
		if err == nil && code == http.StatusOK {
			return true
		}
		exited = rr.p.Alive()
		return exited != nil
	}) == nil {
		return exited // nil when ready
	}
	return rr.p.Failed(fmt.Sprintf("not ready within %v (/readyz: %d %s, %v)", readyWait, code, strings.TrimSpace(string(body)), err))
}

// scrape reads the process's /metrics as series → value.
func (rr *ringsRun) scrape() (map[string]float64, error) {
	code, body, err := httpIn(rr.ns, rr.metrics, "/metrics")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("deployed: %s /metrics: %w", rr.p.Role(), err), rr.p.Alive())
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("deployed: %s /metrics: status %d", rr.p.Role(), code)
	}
	return parseMetrics(string(body)), nil
}

// httpWait bounds one request to a run process's endpoint.
const httpWait = 5 * time.Second

// httpIn GETs path from addr, connecting from inside ns.
func httpIn(ns *netns.NS, addr, path string) (int, []byte, error) {
	var c net.Conn
	err := ns.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", addr, httpWait)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(httpWait))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, body, err
}

// parseMetrics reads the Prometheus text format: "series value" per line,
// the series with its labels as written (`name{ring="A01"}`).
func parseMetrics(text string) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// series is a series' key for ring.
func series(name, ring string) string { return fmt.Sprintf("%s{ring=%q}", name, ring) }

// sumSeries adds up metric name over rings; a missing series is an error
// (a ring the process does not run).
func sumSeries(m map[string]float64, name string, rings []string) (uint64, error) {
	var sum float64
	for _, r := range rings {
		v, ok := m[series(name, r)]
		if !ok {
			return 0, fmt.Errorf("deployed: no series %s", series(name, r))
		}
		sum += v
	}
	return uint64(sum), nil
}

// stopRuns asks every ringfire run of ps to stop (SIGTERM, so that each
// detaches its XDP programs and closes its sessions) and then stops them
// all, the roles too.
func (ps procSet) stopRuns() error {
	for i := len(ps) - 1; i >= 0; i-- {
		if !ps[i].Speaks() {
			ps[i].Terminate()
		}
	}
	return ps.stopAll()
}
