package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/ringfire/ringfire/replica"
)

// liveServer is the server a serve unit runs now (it opens a new one when
// the producer replaces the ring); nil between two. The unit stores it;
// scrapes and a hub's mirror load it.
type liveServer struct {
	p atomic.Pointer[replica.Server]
}

// metricsAddr completes --metrics: an address without a host (":9464",
// "9464") binds the loopback interface.
func metricsAddr(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", usagef("--metrics %q: want [HOST]:PORT", s)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// The metrics endpoint's limits. It shares the process's file descriptors
// with the data path, so it holds at most metricsMaxConns connections:
// further ones wait in the kernel's accept queue, which costs the process
// no descriptor, until one of those closes. Every connection has a
// deadline: a client that sends nothing, sends its request slowly, reads
// the answer slowly or keeps an idle keep-alive connection open is closed
// within seconds. A scraper (Prometheus scrapes every 15 s to 1 min)
// simply reconnects; a poller at 1 s (ringfire top, mirrors) keeps its
// connection.
const (
	metricsMaxConns          = 64
	metricsReadHeaderTimeout = 5 * time.Second  // the request line and headers
	metricsReadTimeout       = 10 * time.Second // the whole request
	metricsWriteTimeout      = 30 * time.Second // from the headers read to the answer written
	metricsIdleTimeout       = 5 * time.Second  // a keep-alive connection between requests
	metricsMaxHeaderBytes    = 16 << 10
)

// startMetrics serves /metrics (Prometheus, read from the units at
// scrape time), /mirrors (a served ring's table of mirrors as JSON),
// /healthz and /readyz on addr until ctx ends.
func startMetrics(ctx context.Context, addr string, set *unitSet, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	srv := newMetricsServer(metricsHandler(set), log)
	at := ln.Addr()
	ln = netutil.LimitListener(ln, metricsMaxConns)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return at, nil
}

// newMetricsServer is the endpoint's server, with its deadlines; what
// net/http reports (an accept error, retried) goes to log at WARN.
func newMetricsServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: metricsReadHeaderTimeout, ReadTimeout: metricsReadTimeout,
		WriteTimeout: metricsWriteTimeout, IdleTimeout: metricsIdleTimeout, MaxHeaderBytes: metricsMaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// metricsHandler routes the endpoints; it has its own registry, which
// also holds client_golang's go_* (goroutines, memory, GC) and process_*
// (open file descriptors and their limit, CPU, memory) series.
func metricsHandler(set *unitSet) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(set), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(set.loops) > 0 {
		reg.MustRegister(newLoopCollector(set.loops))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/mirrors", func(w http.ResponseWriter, r *http.Request) {
		s, err := set.server(r.URL.Query().Get("ring"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(tableOf(s))
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { answer(w, set.healthy()) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { answer(w, set.ready()) })
	return mux
}

// answer writes "ok" or, with 503, why not.
func answer(w http.ResponseWriter, why error) {
	if why != nil {
		http.Error(w, why.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// mirrorTable is the /mirrors document.
type mirrorTable struct {
	WriteSeq uint64       `json:"write_seq"`
	Capacity uint64       `json:"capacity"`
	Mirrors  []mirrorJSON `json:"mirrors"`
}

// mirrorJSON is one mirror of the /mirrors document (replica.MirrorInfo).
type mirrorJSON struct {
	Mirror        string     `json:"mirror"`
	ID            string     `json:"id"`
	Addr          string     `json:"addr"`
	Transport     string     `json:"transport"`
	Connected     bool       `json:"connected"`
	Telemetry     bool       `json:"telemetry"`
	Reported      bool       `json:"reported"`
	Applied       uint64     `json:"applied"`
	LagRecords    uint64     `json:"lag_records"`
	LagMS         float64    `json:"lag_ms"`
	MirrorLag     uint64     `json:"mirror_lag"`
	Naks          uint64     `json:"naks"`
	Retransmitted uint64     `json:"retransmitted"`
	Gaps          uint64     `json:"gaps"`
	Drops         uint64     `json:"drops"`
	Lagging       bool       `json:"lagging"`
	Since         time.Time  `json:"since"`
	LastStatus    *time.Time `json:"last_status,omitempty"`
	Lines         []lineJSON `json:"lines,omitempty"` // a mirror of two lines (mirror --iface-b)
}

func tableOf(s *replica.Server) mirrorTable {
	t := mirrorTable{WriteSeq: s.Stats().WriteSeq, Capacity: s.Capacity(), Mirrors: []mirrorJSON{}}
	for _, m := range s.Mirrors() {
		j := mirrorJSON{Mirror: m.Name, Addr: m.Addr.String(), Transport: m.Transport, Connected: m.Connected,
			Telemetry: m.Telemetry, Reported: m.Reported, Applied: m.Applied, LagRecords: m.LagRecords,
			LagMS: float64(m.Lag) / float64(time.Millisecond), MirrorLag: m.MirrorLag, Naks: m.Naks,
			Retransmitted: m.Retransmitted, Gaps: m.Gaps, Drops: m.Drops, Lagging: m.Lagging, Since: m.Since,
			Lines: linesJSON(m.Lines)}
		if m.ID != 0 {
			j.ID = fmt.Sprintf("%016x", m.ID)
		}
		if !m.LastStatus.IsZero() {
			ls := m.LastStatus
			j.LastStatus = &ls
		}
		t.Mirrors = append(t.Mirrors, j)
	}
	return t
}
