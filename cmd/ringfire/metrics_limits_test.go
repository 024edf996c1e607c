package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
)

// startLimited starts this test binary as `ringfire args...` in ns, with
// its RLIMIT_NOFILE (soft and hard) set to nofile; the test's own limit
// is left alone. The test's end kills the process if it still runs.
func startLimited(t *testing.T, ns *netns.NS, nofile uint64, args ...string) *child {
	t.Helper()
	r := startProc(t, "ringfire "+strings.Join(args, " "), ns, args...)
	// nsenter execs the binary: the limit, set on the pid, holds across
	// the exec, and a hard limit of nofile keeps Go's start-up from
	// raising the soft one.
	lim := unix.Rlimit{Cur: nofile, Max: nofile}
	if err := unix.Prlimit(r.cmd.Process.Pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	return r
}

// openFiles counts the file descriptors process pid holds.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// acceptQueue is the number of connections waiting in the accept queue of
// the TCP listener on addr's port in ns (the Recv-Q ss shows for it).
func acceptQueue(t *testing.T, ns *netns.NS, addr string) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	out, err := ns.Exec("ss", "-Hltn", "sport = :"+port)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) < 2 {
		t.Fatalf("no listener on %s: %q", addr, out)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("ss: %q: %v", out, err)
	}
	return n
}

// hoarded is one idle keep-alive connection of the attack: when its
// request was answered and when the server closed it (zero: not yet).
type hoarded struct {
	answered, closed time.Time
	err              error
}

// hoard opens n connections to addr from ns, sends one HTTP/1.1 request
// for /healthz on each (keep-alive), and reads each answer then waits for
// the server to close it, recording both times. It returns the records,
// guarded by the mutex.
func hoard(t *testing.T, ns *netns.NS, addr string, n int) (*sync.Mutex, []hoarded) {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	err := ns.Do(func() error {
		for range n {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	if err != nil {
		t.Fatalf("connection %d: %v", len(conns)+1, err)
	}
	var mu sync.Mutex
	recs := make([]hoarded, n)
	for i, c := range conns {
		c.SetDeadline(time.Now().Add(90 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: ringfire\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		go func() {
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			mu.Lock()
			recs[i].answered, recs[i].err = time.Now(), err
			mu.Unlock()
			if err != nil {
				return
			}
			_, err = br.ReadByte()
			mu.Lock()
			if errors.Is(err, io.EOF) {
				recs[i].closed = time.Now()
			} else {
				recs[i].err = err
			}
			mu.Unlock()
		}()
	}
	return &mu, recs
}

// 1,100 idle keep-alive connections to serve's metrics endpoint, the
// process limited to 1,024 files: the endpoint holds at most
// metricsMaxConns of them (the rest wait in the kernel's accept queue),
// a fresh mirror connects within 2 s, and the server closes each idle
// connection after metricsIdleTimeout. Before the endpoint had a cap and
// an idle timeout it accepted until EMFILE and kept every connection, and
// serve could not accept the mirror.
func TestMetricsIdleConnsLeaveFilesToMirrors(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	mustRun(t, "gen", src, "--count", "100", "--size", "56", "--capacity", "1024")
	bind, metrics := p.AAddr.String()+":7400", p.AAddr.String()+":9464"
	const nofile, attack = 1024, 1100
	srv := startLimited(t, p.A, nofile, "serve", src, "--bind", bind, "--metrics", metrics)
	waitListening(t, p.A, bind)
	waitListening(t, p.A, metrics)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", srv.cmd.Process.Pid))
	if err != nil || !strings.Contains(string(limits), fmt.Sprintf("Max open files            %d                 %d", nofile, nofile)) {
		t.Fatalf("the serve process's limits (%v):\n%s", err, limits)
	}

	start := time.Now()
	mu, recs := hoard(t, p.B, metrics, attack)
	answered := func() (n, closed int) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if !r.answered.IsZero() && r.err == nil {
				n++
			}
			if !r.closed.IsZero() {
				closed++
			}
		}
		return n, closed
	}
	// The server has taken every connection it will: each is answered or
	// still in the listener's accept queue.
	testenv.Until(t, 20*time.Second, "every connection answered or queued", func() bool {
		n, _ := answered()
		return n > 0 && n+acceptQueue(t, p.A, metrics) == attack
	})
	n, closed := answered()
	files := openFiles(t, srv.cmd.Process.Pid)
	t.Logf("%d connections in %v: %d answered, %d queued; serve holds %d files", attack, time.Since(start).Round(time.Millisecond),
		n, attack-n, files)
	if n-closed > metricsMaxConns {
		t.Errorf("the endpoint holds %d connections, want at most %d", n-closed, metricsMaxConns)
	}

	// A fresh mirror connects within 2 s.
	connected := make(chan time.Time, 1)
	m, err := replica.NewMirror(replica.MirrorConfig{Source: bind, Ring: dst, TCPOnly: true,
		From: replica.From{Mode: replica.FromOldest}, Events: func(e replica.MirrorEvent) {
			if e.Kind == replica.MirrorConnected {
				select {
				case connected <- time.Now():
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dialed := time.Now()
	mdone := p.B.Go(func() { m.Run(ctx) })
	defer func() { cancel(); <-mdone; m.Close() }()
	select {
	case at := <-connected:
		t.Logf("the mirror connected in %v", at.Sub(dialed).Round(time.Millisecond))
	case <-time.After(2 * time.Second):
		t.Fatalf("the mirror did not connect within 2 s; serve holds %d files", openFiles(t, srv.cmd.Process.Pid))
	}

	// The server closes the idle connections it answered, each after the
	// idle timeout.
	testenv.Until(t, metricsIdleTimeout+10*time.Second, "the answered connections closed by the server", func() bool {
		_, c := answered()
		return c >= n
	})
	mu.Lock()
	defer mu.Unlock()
	checked := 0
	for i, r := range recs {
		if r.closed.IsZero() {
			continue
		}
		idle := r.closed.Sub(r.answered)
		if idle < metricsIdleTimeout-50*time.Millisecond || idle > metricsIdleTimeout+3*time.Second {
			t.Errorf("connection %d closed %v after its answer, want about %v", i, idle, metricsIdleTimeout)
		}
		checked++
	}
	t.Logf("%d idle connections closed by the server after %v", checked, metricsIdleTimeout)
}

// The endpoint serves client_golang's go_* and process_* series next to
// ringfire's, and they pass promlint too.
func TestMetricsRuntimeSeries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at, err := startMetrics(ctx, "127.0.0.1:0", &unitSet{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + at.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := parseMetrics(t, strings.NewReader(string(body)))
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_open_fds", "process_max_fds", "process_cpu_seconds_total"} {
		if _, ok := m[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if m["process_open_fds"] < 1 || m["process_max_fds"] < m["process_open_fds"] {
		t.Errorf("process_open_fds %v, process_max_fds %v", m["process_open_fds"], m["process_max_fds"])
	}
	problems, err := promlint.New(strings.NewReader(string(body))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
