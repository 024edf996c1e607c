package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

func TestMetricsAddr(t *testing.T) {
	for in, want := range map[string]string{":9464": "127.0.0.1:9464", "9464": "127.0.0.1:9464",
		"0.0.0.0:1": "0.0.0.0:1", "10.0.0.1:80": "10.0.0.1:80", "[::1]:9": "[::1]:9"} {
		if got, err := metricsAddr(in); got != want || err != nil {
			t.Errorf("metricsAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := metricsAddr("nohost"); err == nil {
		t.Error("metricsAddr accepted an address without a port")
	}
}

// scrape reads the metrics at url into "name{labels}" → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return parseMetrics(t, resp.Body)
}

func parseMetrics(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// seriesOf is the value of a per-mirror metric of the mirror named
// name (the first series that matches), and whether there is one.
func seriesOf(m map[string]float64, metric, name string) (float64, bool) {
	for k, v := range m {
		if strings.HasPrefix(k, metric+"{") && strings.Contains(k, `mirror="`+name+`"`) {
			return v, true
		}
	}
	return 0, false
}

// The metrics, the /mirrors table and "ringfire mirrors" follow a mirror
// that stops and comes back with --from resume.
func TestMetricsFollowMirror(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	dir := t.TempDir()
	w, err := shm.Create(filepath.Join(dir, "src"), shm.RingConfig{PayloadSize: 56, Capacity: 1024}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	push := func(n int) {
		for range n {
			if _, err := w.Push(make([]byte, 56)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var srv *replica.Server
	if err := p.A.Do(func() (err error) {
		srv, err = replica.NewServer(replica.ServerConfig{Ring: filepath.Join(dir, "src"), Bind: p.AAddr.String() + ":0"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() { cancel(); srv.Close(); <-served }()
	u := &serveUnit{name: "src", live: new(liveServer)}
	u.live.p.Store(srv)
	var set unitSet
	set.addServe(u)
	hs := httptest.NewServer(metricsHandler(&set))
	defer hs.Close()

	mring := filepath.Join(dir, "dst")
	start := func(from replica.From) (stop func()) {
		m, err := replica.NewMirror(replica.MirrorConfig{Source: srv.Addr().String(), Ring: mring, From: from,
			TCPOnly: true, Name: "site-b", StatusInterval: 20 * time.Millisecond, Reconnect: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithCancel(context.Background())
		done := p.B.Go(func() { m.Run(mctx) })
		return func() { mcancel(); <-done; m.Close() }
	}
	waitMetrics := func(what string, ok func(m map[string]float64) bool) map[string]float64 {
		t.Helper()
		var m map[string]float64
		testenv.Until(t, 10*time.Second, what, func() bool { m = scrape(t, hs.URL+"/metrics"); return ok(m) })
		return m
	}
	gauge := func(m map[string]float64, name string) float64 {
		v, _ := seriesOf(m, "ringfire_mirror_"+name, "site-b")
		return v
	}
	stop := start(replica.From{Mode: replica.FromOldest})
	push(100)
	m := waitMetrics("caught up at 100", func(m map[string]float64) bool {
		return gauge(m, "applied_seq") == 100 && gauge(m, "lag_records") == 0 && gauge(m, "connected") == 1
	})
	if m[`ringfire_ring_write_seq{ring="src"}`] != 100 || m[`ringfire_serve_mirrors{ring="src"}`] != 1 || gauge(m, "lag_seconds") != 0 || gauge(m, "telemetry") != 1 {
		t.Fatalf("metrics %v", m)
	}
	if _, ok := seriesOf(m, "ringfire_mirror_info", "site-b"); !ok {
		t.Fatalf("no ringfire_mirror_info: %v", m)
	}
	stop()
	push(50)
	waitMetrics("lag 50 while stopped", func(m map[string]float64) bool {
		return gauge(m, "lag_records") == 50 && gauge(m, "connected") == 0 && gauge(m, "lag_seconds") > 0 && gauge(m, "applied_seq") == 100
	})
	out := mustRun(t, "mirrors", strings.TrimPrefix(hs.URL, "http://"))
	wantContains(t, "mirrors while stopped", out, "write_seq 150, capacity 1024, 1 mirrors", "MIRROR", "LAG MS", "site-b", "tcp", "left")
	stop = start(replica.From{Mode: replica.FromResume})
	defer stop()
	waitMetrics("caught up at 150 after resume", func(m map[string]float64) bool {
		return gauge(m, "applied_seq") == 150 && gauge(m, "lag_records") == 0 && gauge(m, "connected") == 1 && gauge(m, "lag_seconds") == 0
	})
	out = mustRun(t, "mirrors", hs.URL)
	wantContains(t, "mirrors after resume", out, "write_seq 150", "1 mirrors", "site-b", "connected")
	if fields := strings.Fields(strings.Split(out, "\n")[2]); len(fields) < 9 || fields[3] != "150" || fields[4] != "0" || fields[6] != "0" || fields[7] != "0" {
		t.Fatalf("row %q, want applied 150, lag 0, NAKs 0, gaps 0", fields)
	}
	var table mirrorTable
	if err := json.Unmarshal([]byte(mustRun(t, "mirrors", hs.URL, "--json")), &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Mirrors) != 1 || table.Mirrors[0].Applied != 150 || !table.Mirrors[0].Connected || table.Mirrors[0].ID == "" {
		t.Fatalf("--json: %+v", table)
	}
}

// serve --metrics serves both endpoints (read here with plain HTTP/1.0
// from the source's namespace); mirrors against nothing fails cleanly.
func TestServeMetricsFlag(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	mustRun(t, "gen", src, "--count", "2000", "--size", "56", "--capacity", "4096")
	bind, metrics := p.AAddr.String()+":7400", p.AAddr.String()+":9464"
	sdone, _, serr := runIn(p.A, "serve", src, "--bind", bind, "--metrics", metrics, "--duration", "3s")
	waitListening(t, p.A, bind)
	waitListening(t, p.A, metrics)
	mdone, _, merr := runIn(p.B, "mirror", bind, dst, "--from", "oldest", "--tcp", "--duration", "2s")
	get := func(path string) string {
		_, body := httpGet(t, p.A, metrics, path)
		return body
	}
	var table mirrorTable
	testenv.Until(t, 2*time.Second, "/mirrors at 2000", func() bool {
		table = mirrorTable{}
		json.Unmarshal([]byte(get("/mirrors")), &table)
		return len(table.Mirrors) > 0 && table.Mirrors[0].Applied == 2000
	})
	m := parseMetrics(t, strings.NewReader(get("/metrics")))
	if v, ok := seriesOf(m, "ringfire_mirror_applied_seq", table.Mirrors[0].Mirror); !ok || v != 2000 || m[`ringfire_ring_write_seq{ring="src"}`] != 2000 {
		t.Fatalf("metrics %v", m)
	}
	waitDone(t, mdone, "mirror")
	waitDone(t, sdone, "serve")
	if *merr != nil || *serr != nil {
		t.Fatalf("mirror: %v, serve: %v", *merr, *serr)
	}
	if _, _, err := runCmd(t, "mirrors", "127.0.0.1:1", "--timeout", "1s"); err == nil {
		t.Error("mirrors of nothing succeeded")
	}
	if _, _, err := runCmd(t, "serve", src, "--metrics", "nohost"); err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("serve --metrics nohost: %v", err)
	}
}

// Lag warnings are logged at WARN with the mirror's figures.
func TestLogLagEvent(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	logEvent(log, replica.ServerEvent{Kind: replica.EventLagging, Mirror: replica.MirrorInfo{Name: "site-b", LagRecords: 600, Applied: 9}})
	logEvent(log, replica.ServerEvent{Kind: replica.EventLagRecovered, Mirror: replica.MirrorInfo{Name: "site-b"}})
	wantContains(t, "log", b.String(), "level=WARN msg=\"mirror lagging: past half the ring's capacity\" mirror=site-b", "lag_records=600", "level=INFO msg=\"mirror lag recovered\"")
}
