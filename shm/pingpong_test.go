package shm

// Two-process round trips, the parent side (the echo child is in
// ppchild_test.go). The benchmark process re-executes its own test binary
// with the ppEnv variable describing the echo to run, which makes TestMain
// (main_test.go) run ppEchoMain instead of the tests:
//
//   - ring: the child attaches to ring A as a consumer, creates ring B as
//     its producer and pushes every 56-byte record (64-byte slot) it
//     receives on A back on B, until the stop record (sequence ppStopSeq);
//   - unix, pipe, tcp: the child echoes 64-byte messages over the transport
//     (internal/ipcbench) until the parent closes its end.
//
// The child also exits when its parent dies or after ppLimit (a watchdog),
// so that no echo process outlives its benchmark. Every op is one message
// out and its echo back, fully compared.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/ipcbench"
)

const (
	ppEnv          = "RINGFIRE_PINGPONG_ECHO"
	ppStopSeq      = ^uint64(0) // ring: the record that asks the echo child to exit
	ppCap          = 64         // slots of the ping-pong rings (one record is ever in flight)
	ppRecvTimeout  = 5 * time.Second
	ppStartTimeout = 10 * time.Second
	ppStopGrace    = 5 * time.Second
)

// ppConfig is what the parent hands the echo child, as JSON in ppEnv.
type ppConfig struct {
	Kind   string        `json:"kind"`   // "ring", or an ipcbench.Transport
	Wait   string        `json:"wait"`   // ring: "spin", "futex" or "sched-yield"
	A      string        `json:"a"`      // ring: parent → child ring (the child consumes it)
	B      string        `json:"b"`      // ring: child → parent ring (the child creates it)
	Addr   string        `json:"addr"`   // tcp: the parent's listener
	Parent int           `json:"parent"` // the parent's pid, for the watchdog
	Limit  time.Duration `json:"limit"`  // the child's lifetime bound
}

// ppLimit is the echo child's lifetime: a minute, plus room for a long
// -test.benchtime.
func ppLimit() time.Duration {
	limit := time.Minute
	if f := flag.Lookup("test.benchtime"); f != nil {
		s := f.Value.String()
		if d, err := time.ParseDuration(s); err == nil {
			limit += 3 * d
		} else if n, err := strconv.Atoi(strings.TrimSuffix(s, "x")); err == nil {
			limit += time.Duration(n) * 100 * time.Microsecond // generous per round trip
		}
	}
	return limit
}

// ppSpawn starts the echo child for cfg with files as its descriptors 3...
// It is killed and reaped when tb ends, whatever happens.
func ppSpawn(tb testing.TB, cfg ppConfig, files []*os.File) *ipcbench.Child {
	tb.Helper()
	cfg.Parent = os.Getpid()
	cfg.Limit = ppLimit()
	js, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	args := reexecArgs(tb, cfg.Limit+30*time.Second)
	child, err := ipcbench.StartChild(args, []string{ppEnv + "=" + string(js)}, files)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { child.Stop(0) })
	return child
}

// ppRing is the parent side of a ring ping-pong.
type ppRing struct {
	p       *Producer[benchMsg] // ring A
	c       *Consumer[benchMsg] // ring B
	child   *ipcbench.Child
	seq     uint64
	out, in benchMsg
	recv    func() error // receive the echo into in
}

// ppStartRing creates ring A, starts the echo child with the given wait
// mode and attaches to ring B once the child has created it.
func ppStartRing(tb testing.TB, wait string) *ppRing {
	tb.Helper()
	ws, err := ppWait(wait)
	if err != nil {
		tb.Fatal(err)
	}
	dir := benchDir(tb)
	a, b := filepath.Join(dir, "ping-a"), filepath.Join(dir, "pong-b")
	r := &ppRing{p: producer[benchMsg](tb, a, ProducerOptions{Capacity: ppCap})}
	for i := range r.out.Pay {
		r.out.Pay[i] = byte(0xA5 ^ i)
	}
	r.child = ppSpawn(tb, ppConfig{Kind: "ring", Wait: wait, A: a, B: b}, nil)
	r.recv = func() error { return r.c.Recv(&r.in, ppRecvTimeout) }
	if wait == "futex-ctx" { // one context for the run, bounding every receive
		ctx, cancel := context.WithTimeout(context.Background(), ppLimit())
		tb.Cleanup(cancel)
		r.recv = func() error { return r.c.RecvContext(ctx, &r.in) }
	}

	// Wait (bounded) until B exists and is a complete ring: before the
	// child has stored its magic, NewConsumer fails (not found, truncated,
	// bad magic).
	deadline := time.Now().Add(ppStartTimeout)
	for {
		c, err := NewConsumer[benchMsg](b, ReadOptions{Start: StartOldest, Wait: &ws, Name: "pingpong-parent"})
		if err == nil {
			r.c = c
			tb.Cleanup(func() { c.Close() })
			return r
		}
		select {
		case <-r.child.Done():
			tb.Fatalf("echo child exited before creating ring B: %v", r.child.Stop(0))
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("ring B not attachable after %v: %v; child output:\n%s", ppStartTimeout, err, r.child.Output())
		}
		time.Sleep(time.Millisecond)
	}
}

// roundTrip pushes the next record on A and waits (with the consumer's
// strategy, at most ppRecvTimeout) for its echo on B, comparing all of it.
func (r *ppRing) roundTrip() error {
	r.seq++
	benchStamp(&r.out, r.seq)
	if _, err := r.p.Push(&r.out); err != nil {
		return fmt.Errorf("push %d: %w", r.seq, err)
	}
	if err := r.recv(); err != nil {
		rd := r.c.Reader()
		return fmt.Errorf("echo of %d: %w (ring B: write_seq %d; parent reader: received %d, lapped %d, next %d); child output:\n%s",
			r.seq, err, rd.Ring().WriteSeq(), rd.Received(), rd.Lapped(), rd.Next(), r.child.Output())
	}
	if r.in != r.out {
		return fmt.Errorf("echo of %d differs:\n sent %+v\n  got %+v", r.seq, r.out, r.in)
	}
	return nil
}

// stop sends the stop record and waits for the child to exit cleanly (it
// is killed after ppStopGrace) and be reaped.
func (r *ppRing) stop() error {
	var m benchMsg
	m.Seq = ppStopSeq
	if _, err := r.p.Push(&m); err != nil {
		return err
	}
	return r.child.Stop(ppStopGrace)
}

// ppSession is the parent side of a ping-pong with an echo child: over two
// rings (ppRing) or a kernel transport (ppTransport).
type ppSession interface {
	roundTrip() error // one message out and its echo back, fully compared
	stop() error      // ends the child and reaps it
	echoChild() *ipcbench.Child
}

func (r *ppRing) echoChild() *ipcbench.Child { return r.child }

// benchPingPong times round trips of s and reports the context switches
// per round trip of both processes.
func benchPingPong(b *testing.B, s ppSession) {
	b.ReportAllocs()
	cs := ipcbench.CtxSwitchesSelf()
	for b.Loop() {
		if err := s.roundTrip(); err != nil {
			b.Fatal(err)
		}
	}
	cs = ipcbench.CtxSwitchesSelf() - cs
	if err := s.stop(); err != nil {
		b.Fatal(err)
	}
	ppReportCtxSwitches(b, cs, s.echoChild())
}

func benchRingPingPong(b *testing.B, wait string) {
	r := ppStartRing(b, wait)
	if ppPinned(wait) {
		defer ppPin(0)()
	}
	benchPingPong(b, r)
}

// ppReportCtxSwitches reports the context switches per round trip of both
// processes: the parent's during the timed loop plus the child's over its
// whole life (start-up and exit included, a few hundred at most). It tells
// how often a side actually went to sleep.
func ppReportCtxSwitches(b *testing.B, parent int64, child *ipcbench.Child) {
	if n, ok := child.CtxSwitches(); ok && b.N > 0 {
		b.ReportMetric(float64(parent+n)/float64(b.N), "ctxsw/op")
	}
}

// BenchmarkPingPongSpin: a 64-byte round trip through two rings to an echo
// process, both sides waiting with BusySpin, each on its own pinned core.
func BenchmarkPingPongSpin(b *testing.B) { benchRingPingPong(b, "spin") }

// BenchmarkPingPongFutex: the same with FutexWait(32) on both sides.
func BenchmarkPingPongFutex(b *testing.B) { benchRingPingPong(b, "futex") }

// BenchmarkPingPongFutexCtx: BenchmarkPingPongFutex with RecvContext on
// both sides (a cancellable context, one per side for the run: futex sleeps
// also wait on the cancel word with futex_waitv).
func BenchmarkPingPongFutexCtx(b *testing.B) { benchRingPingPong(b, "futex-ctx") }

// BenchmarkPingPongPark: the same with ParkWait(32) on both sides: the
// receiving goroutines park and the park hub's thread sleeps on the futex.
func BenchmarkPingPongPark(b *testing.B) { benchRingPingPong(b, "park") }

// BenchmarkPingPongSchedYield: the same with SpinSchedYield(32) on both
// sides, unpinned: each yields its CPU to the other between polls.
func BenchmarkPingPongSchedYield(b *testing.B) { benchRingPingPong(b, "sched-yield") }

// ppTransport is the parent side of a kernel-transport ping-pong.
type ppTransport struct {
	c     *ipcbench.Client
	child *ipcbench.Child
}

// ppStartTransport sets up a kernel transport to an echo child.
func ppStartTransport(tb testing.TB, tr ipcbench.Transport) *ppTransport {
	tb.Helper()
	l, err := ipcbench.NewLink(tr)
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	child := ppSpawn(tb, ppConfig{Kind: string(tr), Addr: l.Addr()}, l.ChildFiles())
	c, err := l.Connect(ppStartTimeout)
	if err != nil {
		tb.Fatalf("%v; child output:\n%s", err, child.Output())
	}
	tb.Cleanup(func() { c.Close() })
	// One deadline for the whole run (per-op deadlines would be measured):
	// the child's own limit ends it before then anyway.
	if err := c.SetDeadline(time.Now().Add(ppLimit() + ppStartTimeout)); err != nil {
		tb.Fatal(err)
	}
	return &ppTransport{c, child}
}

func (p *ppTransport) roundTrip() error {
	if err := p.c.RoundTrip(); err != nil {
		return fmt.Errorf("%v; child output:\n%s", err, p.child.Output())
	}
	return nil
}

// stop closes the parent's end, which makes the child see end of file and
// exit, then reaps it (killing it after ppStopGrace).
func (p *ppTransport) stop() error { return errors.Join(p.c.Close(), p.child.Stop(ppStopGrace)) }

func (p *ppTransport) echoChild() *ipcbench.Child { return p.child }

func benchTransportPingPong(b *testing.B, tr ipcbench.Transport) {
	benchPingPong(b, ppStartTransport(b, tr))
}

// BenchmarkPingPongUnix: a 64-byte round trip to an echo process over a
// Unix domain stream socket (socketpair).
func BenchmarkPingPongUnix(b *testing.B) { benchTransportPingPong(b, ipcbench.Unix) }

// BenchmarkPingPongPipe: the same over two pipes.
func BenchmarkPingPongPipe(b *testing.B) { benchTransportPingPong(b, ipcbench.Pipe) }

// BenchmarkPingPongTCP: the same over TCP loopback with TCP_NODELAY.
func BenchmarkPingPongTCP(b *testing.B) { benchTransportPingPong(b, ipcbench.TCP) }

// TestPingPongRoundTrips runs a few hundred round trips of every ping-pong
// case against a real echo process, checks that the child exits cleanly,
// and that a round trip allocates nothing.
func TestPingPongRoundTrips(t *testing.T) {
	const rounds = 300
	for _, wait := range []string{"spin", "futex", "futex-ctx", "park", "sched-yield"} {
		t.Run("ring-"+wait, func(t *testing.T) {
			r := ppStartRing(t, wait)
			if ppPinned(wait) {
				defer ppPin(0)()
			}
			ppRoundTrips(t, r, rounds)
			if a := testing.AllocsPerRun(100, func() {
				if err := r.roundTrip(); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("ring round trip: %v allocations, want 0", a)
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, tr := range ipcbench.Transports() {
		t.Run(string(tr), func(t *testing.T) {
			p := ppStartTransport(t, tr)
			ppRoundTrips(t, p, rounds)
			if err := p.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// ppRoundTrips runs n round trips of s, failing t at the first error.
func ppRoundTrips(t *testing.T, s ppSession, n int) {
	t.Helper()
	for range n {
		if err := s.roundTrip(); err != nil {
			t.Fatal(err)
		}
	}
}
