package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
)

// linesFiles are the two sides' run files of a ring served on two lines:
// line A by la, line B by lb, the TCP session over the pair's own link.
func linesFiles(p *netns.Pair, la, lb netns.Link, ring, dst string) (serve, mirror string) {
	serve = fmt.Sprintf("metrics = %q\n\n[[serve]]\nring = %q\nbind = \"%s:7400\"\n"+
		"multicast = \"239.255.0.1:7401\"\niface = %q\nmulticast-b = \"239.255.1.1:7402\"\niface-b = %q\n",
		p.AAddr.String()+":9464", ring, p.AAddr, la.AAddr.String(), lb.AAddr.String())
	mirror = fmt.Sprintf("metrics = %q\nlog-format = \"text\"\n\n[[mirror]]\nsource = \"%s:7400\"\nring = %q\n"+
		"from = \"oldest\"\niface = %q\niface-b = %q\nany-source = true\nreconnect-ms = 100\n",
		p.BAddr.String()+":9464", p.AAddr, dst, la.BAddr.String(), lb.BAddr.String())
	return serve, mirror
}

// Two ringfire run processes, a source and a mirror in two namespaces
// joined by two links besides their own, carry a ring on both lines while
// records keep coming: line A's link goes down mid-stream, comes back,
// then line B's goes down. The mirror misses nothing (byte-identical
// ring, no gap, no NAK, one connection), its metrics tell each line's
// fall and return, and the source's table of mirrors (/mirrors, as
// ringfire mirrors prints it) shows the mirror's two lines.
func TestRunLines(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	la, err := p.AddLink()
	if err != nil {
		t.Fatal(err)
	}
	lb, err := p.AddLink()
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRings(t, "lines")
	dst := filepath.Join(t.TempDir(), "lines")
	serve, mirror := linesFiles(p, la, lb, r.path("lines"), dst)
	cfgA, cfgB := filepath.Join(t.TempDir(), "a.toml"), filepath.Join(t.TempDir(), "b.toml")
	writeFile(t, cfgA, serve)
	writeFile(t, cfgB, mirror)
	a := startRun(t, p.A, cfgA)
	waitListening(t, p.A, p.AAddr.String()+":7400")
	b := startRun(t, p.B, cfgB)
	metA, metB := p.AAddr.String()+":9464", p.BAddr.String()+":9464"
	waitListening(t, p.B, metB)

	line := func(name, l string) string {
		return fmt.Sprintf(`ringfire_local_mirror_line_%s{line=%q,ring="lines"}`, name, l)
	}
	until := func(what string, ok func(m map[string]float64) bool) map[string]float64 {
		t.Helper()
		var m map[string]float64
		testenv.Until(t, 15*time.Second, what, func() bool { m = metricsIn(t, p.B, metB); return ok(m) })
		return m
	}
	more := func(l string, n float64) { // line l delivers n datagrams more
		t.Helper()
		from := metricsIn(t, p.B, metB)[line("datagrams_total", l)]
		until("line "+l+" delivers", func(m map[string]float64) bool { return m[line("datagrams_total", l)] >= from+n })
	}
	link := func(ifn, state string) {
		t.Helper()
		if _, err := p.B.Exec("ip", "link", "set", ifn, state); err != nil {
			t.Fatal(err)
		}
	}
	// The mirror takes datagrams on both lines (heartbeats) before the
	// records come: what came before is the session's catch-up.
	until("both lines' heartbeats", func(m map[string]float64) bool {
		return m[line("datagrams_total", "A")] > 0 && m[line("datagrams_total", "B")] > 0
	})
	stop, pushed := make(chan struct{}), make(chan uint64, 1)
	go func() { // the producer's pace: 20 records every 200 µs
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		rec := make([]byte, 56)
		var n uint64
		for {
			select {
			case <-stop:
				pushed <- n
				return
			case <-tick.C:
			}
			for range 20 {
				n++
				copy(rec, fmt.Sprintf("record %d", n))
				if _, err := r.writers["lines"].Push(rec); err != nil {
					t.Errorf("push record %d: %v", n, err)
					<-stop
					pushed <- n - 1
					return
				}
			}
		}
	}()
	until("both lines up", func(m map[string]float64) bool {
		return m[line("up", "A")] == 1 && m[line("up", "B")] == 1 && m[line("datagrams_total", "A")] > 100 && m[line("datagrams_total", "B")] > 100
	})
	link(la.BIf, "down")
	until("line A down", func(m map[string]float64) bool { return m[line("up", "A")] == 0 && m[line("downs_total", "A")] == 1 })
	more("B", 300)
	link(la.BIf, "up")
	until("line A back", func(m map[string]float64) bool { return m[line("up", "A")] == 1 && m[line("ups_total", "A")] == 1 })
	more("A", 100)
	link(lb.BIf, "down")
	until("line B down", func(m map[string]float64) bool { return m[line("up", "B")] == 0 && m[line("downs_total", "B")] == 1 })
	more("A", 300)
	t.Logf("NAKs before the end: %v", metricsIn(t, p.B, metB)[`ringfire_local_mirror_naks_total{ring="lines"}`])
	close(stop)
	n := <-pushed
	waitMirrored(t, p.B, metB, "lines", n)
	mB := metricsIn(t, p.B, metB)
	for k, want := range map[string]float64{`ringfire_local_mirror_naks_total{ring="lines"}`: 0,
		`ringfire_local_mirror_gap_records_total{ring="lines"}`: 0, `ringfire_local_mirror_connects_total{ring="lines"}`: 1} {
		if mB[k] != want {
			t.Errorf("%s = %v, want %v", k, mB[k], want)
		}
	}
	sameRings(t, r.path("lines"), dst)

	// The source's table: the mirror's two lines, as its STATUS said.
	var tab mirrorTable
	testenv.Until(t, 5*time.Second, "the source's table with line B down", func() bool {
		code, body := httpGet(t, p.A, metA, "/mirrors")
		tab = mirrorTable{}
		if code != 200 || json.Unmarshal([]byte(body), &tab) != nil || len(tab.Mirrors) != 1 || len(tab.Mirrors[0].Lines) != 2 {
			return false
		}
		ls := tab.Mirrors[0].Lines
		return ls[0].Up && !ls[1].Up && ls[0].Downs == 1 && ls[0].Ups == 1 && ls[1].Downs == 1
	})
	var out bytes.Buffer
	printMirrorTable(&out, tab)
	if s := out.String(); !strings.Contains(s, "LINES (FIRST/LATE/LOST)") || !strings.Contains(s, "A:udp up ") || !strings.Contains(s, "B:udp down ") {
		t.Errorf("ringfire mirrors:\n%s", s)
	}
	t.Logf("ringfire mirrors:\n%s", out.String())
	mA := metricsIn(t, p.A, metA)
	var upB bool
	for k, v := range mA {
		if strings.HasPrefix(k, "ringfire_mirror_line_up{") && strings.Contains(k, `line="B"`) {
			upB = v == 0
		}
	}
	if !upB {
		t.Errorf("the source's metrics do not say the mirror's line B is down")
	}
	b.stop(t)
	a.stop(t)
}
