package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/xdptest"
)

// servesFile is the source side's file: rings served over AF_XDP on veth0,
// unicast, multicast and blob (or, after the reload, extra for blob).
func servesFile(p *netns.Pair, r *testRings, loop string, rings ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metrics = %q\n%s", p.AAddr.String()+":9464", loop)
	for _, name := range rings {
		i := indexOf(name)
		fmt.Fprintf(&b, "\n[[serve]]\nring = %q\nbind = %q\nxdp = \"veth0\"\nrequire-xdp = true\niface = %q\n",
			r.path(name), fmt.Sprintf("%s:%d", p.AAddr, 7400+10*i), p.AAddr.String())
		if name == "multi" {
			fmt.Fprintf(&b, "multicast = \"239.255.0.1:%d\"\n", 7401+10*i)
		} else {
			fmt.Fprintf(&b, "udp = %d\n", 7403+10*i)
		}
	}
	return b.String()
}

// mirrorsFile is the mirror side's file: one mirror per ring, bind ports
// as servesFile gave them.
func mirrorsFile(p *netns.Pair, dir, loop string, rings ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metrics = %q\nlog-format = \"text\"\n%s", p.BAddr.String()+":9464", loop)
	for _, name := range rings {
		i := indexOf(name)
		fmt.Fprintf(&b, "\n[[mirror]]\nsource = %q\nring = %q\nfrom = \"oldest\"\nxdp = \"veth0\"\nrequire-xdp = true\niface = %q\nreconnect-ms = 100\n",
			fmt.Sprintf("%s:%d", p.AAddr, 7400+10*i), filepath.Join(dir, name), p.BAddr.String())
		if name != "multi" {
			b.WriteString("unicast = true\n")
		}
	}
	return b.String()
}

// Two ringfire run processes, one per namespace, carry three rings
// (unicast, multicast, blob) over AF_XDP on one veth each: every mirror is
// byte-identical to its source, the steering program of each side holds
// the flows of all three, the metrics say AF_XDP carried them, nothing
// fell back. Then SIGHUP adds a fourth ring and removes the blob ring on
// both sides while records keep coming: the rings kept miss nothing (no
// NAK, no gap, no reconnection), the removed mirror saw its source close,
// the new ring is mirrored. A changed table restarts alone. A file that no
// longer parses is refused and changes nothing; SIGTERM stops both with
// exit status 0. All of it with every unit on its own threads, and with
// the units of a process on two Loops (loop = "yield", loops = 2, the
// loops' metrics showing they ran them).
func TestRunManyRingsOverXDP(t *testing.T) {
	t.Run("threads", func(t *testing.T) { runManyRingsOverXDP(t, "") })
	t.Run("loops", func(t *testing.T) { runManyRingsOverXDP(t, "loop = \"yield\"\nloops = 2\n") })
}

func runManyRingsOverXDP(t *testing.T, loop string) {
	netns.Require(t)
	p := netns.NewPair(t)
	for _, ns := range []*netns.NS{p.A, p.B} {
		xdptest.Pin(t, ns, "veth0") // shared, as xdpctl attach shares it: flows are listed by owner
	}
	r := newTestRings(t, "uni", "multi", "extra")
	dstDir := t.TempDir()
	cfgA, cfgB := filepath.Join(t.TempDir(), "a.toml"), filepath.Join(t.TempDir(), "b.toml")
	writeFile(t, cfgA, servesFile(p, r, loop, "uni", "multi", "blob"))
	writeFile(t, cfgB, mirrorsFile(p, dstDir, loop, "uni", "multi", "blob"))
	for _, n := range []string{"uni", "multi", "blob"} {
		r.push(t, n, 3000)
	}
	a := startRun(t, p.A, cfgA)
	for i := range 3 {
		waitListening(t, p.A, fmt.Sprintf("%s:%d", p.AAddr, 7400+10*i))
	}
	b := startRun(t, p.B, cfgB)
	metA, metB := p.AAddr.String()+":9464", p.BAddr.String()+":9464"
	waitListening(t, p.B, metB)
	for _, n := range []string{"uni", "multi", "blob"} {
		waitMirrored(t, p.B, metB, n, 3000)
		r.push(t, n, 2000) // live, over the datagram stream
		waitMirrored(t, p.B, metB, n, 5000)
		sameRings(t, r.path(n), filepath.Join(dstDir, n))
	}
	if code, body := httpGet(t, p.B, metB, "/readyz"); code != 200 {
		t.Fatalf("/readyz %d: %s", code, body)
	}
	if code, body := httpGet(t, p.A, metA, "/healthz"); code != 200 {
		t.Fatalf("/healthz %d: %s", code, body)
	}
	if got := flowsOf(t, p.A, "veth0", a.cmd.Process.Pid); got != 3 {
		t.Errorf("the source's program holds %d flows of its process, want 3", got)
	}
	if got := flowsOf(t, p.B, "veth0", b.cmd.Process.Pid); got != 3 {
		t.Errorf("the mirrors' program holds %d flows of their process, want 3", got)
	}
	mB, mA := metricsIn(t, p.B, metB), metricsIn(t, p.A, metA)
	for _, n := range []string{"uni", "multi", "blob"} {
		kind := "unicast"
		if n == "multi" {
			kind = "multicast"
		}
		src := fmt.Sprintf("%s:%d", p.AAddr, 7400+10*indexOf(n))
		if mB[fmt.Sprintf(`ringfire_local_mirror_info{ring=%q,source=%q,transport="xdp %s"}`, n, src, kind)] != 1 {
			t.Errorf("mirror %s does not say xdp %s: %v", n, kind, mB)
		}
		if mB[fmt.Sprintf(`ringfire_local_mirror_datagrams_total{ring=%q}`, n)] == 0 {
			t.Errorf("mirror %s received no datagrams", n)
		}
		if mA[fmt.Sprintf(`ringfire_serve_datagrams_total{ring=%q}`, n)] == 0 || mA[fmt.Sprintf(`ringfire_serve_info{ring=%q,transport="xdp"}`, n)] != 1 {
			t.Errorf("serve %s: no datagrams over xdp: %v", n, mA)
		}
	}
	if loop != "" {
		for _, m := range []map[string]float64{mA, mB} {
			members := m[`ringfire_loop_members{loop="0"}`] + m[`ringfire_loop_members{loop="1"}`]
			busy := m[`ringfire_loop_busy_turns_total{loop="0"}`] + m[`ringfire_loop_busy_turns_total{loop="1"}`]
			if members != 3 || busy == 0 {
				t.Errorf("the two loops do not run the three units: %v", m)
			}
		}
	}
	for _, rp := range []*child{a, b} {
		if l := rp.logs(); strings.Contains(l, "falling back") || strings.Count(l, `msg="datagrams over AF_XDP"`) < 3 {
			t.Fatalf("want AF_XDP for every ring and no fallback:\n%s", l)
		}
	}
	if code, body := httpGet(t, p.A, metA, "/mirrors?ring=multi"); code != 200 || !strings.Contains(body, `"write_seq":5000`) || !strings.Contains(body, `"transport":"xdp multicast"`) {
		t.Errorf("/mirrors?ring=multi: %d %s", code, body)
	}
	if code, body := httpGet(t, p.A, metA, "/mirrors"); code != 404 || !strings.Contains(body, "name one of blob, multi, uni") {
		t.Errorf("/mirrors of three rings: %d %s", code, body)
	}

	before := metricsIn(t, p.B, metB)
	// The reload: extra added, blob removed, records coming all along.
	r.push(t, "uni", 1000)
	writeFile(t, cfgA, servesFile(p, r, loop, "uni", "multi", "extra"))
	a.cmd.Process.Signal(syscall.SIGHUP)
	r.push(t, "multi", 1000)
	a.waitLogs(t, 1, "msg=reloaded")
	wantContains(t, "the source's reload", a.logs(), "started=1 stopped=1 restarted=0 unchanged=2")
	b.waitLogs(t, 1, `msg="disconnected from the source" unit=mirror ring=blob`)
	writeFile(t, cfgB, mirrorsFile(p, dstDir, loop, "uni", "multi", "extra"))
	b.cmd.Process.Signal(syscall.SIGHUP)
	b.waitLogs(t, 1, "msg=reloaded")
	r.push(t, "extra", 500)
	r.push(t, "uni", 1000)
	r.push(t, "multi", 1000)
	waitMirrored(t, p.B, metB, "uni", 7000)
	waitMirrored(t, p.B, metB, "multi", 7000)
	waitMirrored(t, p.B, metB, "extra", 500)
	mB = metricsIn(t, p.B, metB)
	for _, n := range []string{"uni", "multi"} {
		for _, c := range []string{"naks_total", "gap_records_total"} {
			k := fmt.Sprintf(`ringfire_local_mirror_%s{ring=%q}`, c, n)
			if v := mB[k] - before[k]; v != 0 {
				t.Errorf("mirror %s: %s +%v across the reload (%v before), want 0", n, c, v, before[k])
			}
		}
		if v := mB[fmt.Sprintf(`ringfire_local_mirror_connects_total{ring=%q}`, n)]; v != 1 {
			t.Errorf("mirror %s connected %v times, want once: the reload touched it", n, v)
		}
	}
	if _, ok := mB[`ringfire_local_mirror_next_seq{ring="blob"}`]; ok {
		t.Error("the removed mirror is still reported")
	}

	// A changed table restarts alone: extra's serve sends every datagram
	// twice now; uni and multi are not touched (one connection each).
	writeFile(t, cfgA, strings.Replace(servesFile(p, r, loop, "uni", "multi", "extra"), "udp = 7433\n", "udp = 7433\ndup = 2\n", 1))
	a.cmd.Process.Signal(syscall.SIGHUP)
	a.waitLogs(t, 2, "msg=reloaded")
	wantContains(t, "the source's second reload", a.logs(), "started=0 stopped=0 restarted=1 unchanged=2")
	r.push(t, "extra", 500)
	r.push(t, "uni", 100)
	waitMirrored(t, p.B, metB, "extra", 1000)
	waitMirrored(t, p.B, metB, "uni", 7100)
	mB = metricsIn(t, p.B, metB)
	for _, n := range []string{"uni", "multi"} {
		if v := mB[fmt.Sprintf(`ringfire_local_mirror_connects_total{ring=%q}`, n)]; v != 1 {
			t.Errorf("mirror %s connected %v times, want once: the changed table restarted it", n, v)
		}
	}

	// A file that no longer parses changes nothing.
	writeFile(t, cfgB, "[[mirror]\nring = \n")
	b.cmd.Process.Signal(syscall.SIGHUP)
	b.waitLogs(t, 1, `msg="reload refused, the running set is kept"`)
	wantContains(t, "the refused reload", b.logs(), "b.toml:1:")
	r.push(t, "uni", 100)
	waitMirrored(t, p.B, metB, "uni", 7200)

	b.stop(t)
	a.stop(t)
	for _, n := range []string{"uni", "multi", "extra"} {
		sameRings(t, r.path(n), filepath.Join(dstDir, n))
	}
}

func indexOf(name string) int {
	return map[string]int{"uni": 0, "multi": 1, "blob": 2, "extra": 3}[name]
}
