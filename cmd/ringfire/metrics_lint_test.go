package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// exportedMetrics builds the collectors of a ringfire run process the way
// metricsHandler does, over a unit set holding every kind of unit (a
// served ring with a mirror that reports STATUS, a local mirror, a
// recorder, a Loop), waits until every series it describes is exported,
// and returns the pedantic registry holding them and the described metric
// names.
func exportedMetrics(t *testing.T) (*prometheus.Registry, []string) {
	t.Helper()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	w, err := shm.Create(src, shm.RingConfig{PayloadSize: 56, Capacity: 1024}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	srv, err := replica.NewServer(replica.ServerConfig{Ring: src, Bind: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	m, err := replica.NewMirror(replica.MirrorConfig{Source: srv.Addr().String(), Ring: dst, TCPOnly: true,
		From: replica.From{Mode: replica.FromOldest}, Name: "site-b", StatusInterval: 20 * time.Millisecond})
	if err != nil {
		cancel()
		srv.Close()
		t.Fatal(err)
	}
	mirrored := make(chan error, 1)
	go func() { mirrored <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-mirrored; m.Close(); srv.Close(); <-served })
	loop, err := replica.NewLoop(replica.LoopConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Close() })

	u := &serveUnit{name: ringName(src), live: new(liveServer)}
	u.live.p.Store(srv)
	var set unitSet
	set.addServe(u)
	set.mirrors = append(set.mirrors, &mirrorUnit{name: ringName(dst), source: srv.Addr().String(), path: dst, m: m})
	set.loops = []*replica.Loop{loop}
	set.addRecord(recordUnitOfRing(t, src))

	reg := prometheus.NewPedanticRegistry()
	c := newCollector(&set)
	reg.MustRegister(c, newLoopCollector(set.loops))
	described := describedNames(c, newLoopCollector(set.loops))
	for range 10 {
		if _, err := w.Push(make([]byte, 56)); err != nil {
			t.Fatal(err)
		}
	}
	var missing []string
	if !testenv.Await(10*time.Second, func() bool {
		got := gatheredNames(t, reg)
		missing = missing[:0]
		for _, n := range described {
			// One line exports no line series: TestLineMetricsLint.
			oneLine := strings.HasPrefix(n, "ringfire_local_mirror_line_") || strings.HasPrefix(n, "ringfire_serve_line_") ||
				strings.HasPrefix(n, "ringfire_mirror_line_")
			if !slices.Contains(got, n) && !oneLine {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0
	}) {
		t.Fatalf("after 10 s, still not exported: %v", missing)
	}
	return reg, described
}

// recordUnitOfRing is a record unit of ring into a fresh archive, its
// recorder made (not run): its counters are there to scrape.
func recordUnitOfRing(t *testing.T, ring string) *recordUnit {
	t.Helper()
	w, err := archive.OpenWriter(t.TempDir(), archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r, err := archive.NewRecorder(w, archive.RecorderConfig{Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	u := &recordUnit{name: ringName(ring), ring: ring, dir: "archive", failures: new(atomic.Uint64)}
	u.live.Store(r)
	return u
}

// describedNames returns the metric names the collectors describe.
func describedNames(cs ...prometheus.Collector) []string {
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for _, c := range cs {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fq.FindStringSubmatch(d.String()); m != nil {
				names = append(names, m[1])
			}
		}
	}
	sort.Strings(names)
	return names
}

// gatheredNames returns the metric names reg exports now.
func gatheredNames(t *testing.T, reg prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}

// Every metric of /metrics passes client_golang's promlint (what
// testutil.CollectAndLint runs, on a pedantic registry), with every
// series it describes present.
func TestMetricsLint(t *testing.T) {
	reg, described := exportedMetrics(t)
	if len(described) < 40 {
		t.Fatalf("only %d metrics described: %v", len(described), described)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	t.Logf("%d metric families linted, %d problems", len(mfs), len(problems))
}

// metricRef matches a ringfire metric name in a PromQL expression.
var metricRef = regexp.MustCompile(`\bringfire_[a-z0-9_]+\b`)

// checkRefs fails for an expression that names no ringfire metric, or
// one the collectors do not describe.
func checkRefs(t *testing.T, where, expr string, described []string) {
	t.Helper()
	refs := metricRef.FindAllString(expr, -1)
	if len(refs) == 0 {
		t.Errorf("%s: expression names no ringfire metric: %s", where, expr)
	}
	for _, r := range refs {
		if !slices.Contains(described, r) {
			t.Errorf("%s: %s is not a metric ringfire exports (expression %s)", where, r, expr)
		}
	}
}

// The Grafana dashboard in contrib/grafana is valid JSON, and every query
// of its panels names metrics ringfire exports.
func TestGrafanaDashboard(t *testing.T) {
	_, described := exportedMetrics(t)
	b, err := os.ReadFile("../../contrib/grafana/ringfire.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []dashPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("contrib/grafana/ringfire.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels: %q %q %d", dash.Title, dash.UID, len(dash.Panels))
	}
	targets := 0
	for _, p := range flatPanels(dash.Panels) {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			targets++
			checkRefs(t, "panel "+p.Title, tg.Expr, described)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok && strings.Contains(q, "ringfire_") {
			checkRefs(t, "variable "+v.Name, q, described)
		}
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok && strings.Contains(s, "ringfire_") {
				checkRefs(t, "variable "+v.Name, s, described)
			}
		}
	}
	if targets == 0 {
		t.Fatal("no queries in the dashboard")
	}
}

type dashPanel struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []dashPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// flatPanels lists the panels and those of collapsed rows.
func flatPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatPanels(p.Panels)...)
	}
	return out
}

// Every expression of the alert rules in contrib/prometheus names metrics
// ringfire exports (promtool, in contrib/prometheus, checks the syntax and
// the alerts' behaviour; it cannot know which metrics exist).
func TestAlertRulesNameRealMetrics(t *testing.T) {
	_, described := exportedMetrics(t)
	b, err := os.ReadFile("../../contrib/prometheus/ringfire.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	exprs, alert := 0, ""
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if a, ok := strings.CutPrefix(line, "- alert:"); ok {
			alert = strings.TrimSpace(a)
		}
		if !strings.HasPrefix(line, "expr:") {
			continue
		}
		expr := strings.TrimSpace(strings.TrimPrefix(line, "expr:"))
		if expr == "|" || expr == ">" || expr == "|-" || expr == ">-" {
			expr = ""
			indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent) {
				i++
				expr += " " + strings.TrimSpace(lines[i])
			}
		}
		exprs++
		checkRefs(t, "alert "+alert, expr, described)
	}
	if exprs < 7 {
		t.Fatalf("%d expressions in the rules, want one per alert (7)", exprs)
	}
}
