package replica_test

// Rig of the replication benchmarks (bench_test.go): sources and mirrors
// running in the two namespaces of a netns.Pair, with their rings on tmpfs.
//
// Unlike the test harness, a benchmark mirror is connected inside its
// namespace (netns.Do creates its TCP and UDP sockets there) and then runs
// in an ordinary goroutine, as a mirror process would: a goroutine locked to
// a namespace thread (netns.Go) pays a thread hand-off on every wake-up,
// which would be charged to the protocol. The price is that such a mirror
// cannot reconnect (its new sockets would be made in the root namespace), so
// it runs with Once and a benchmark fails if its connection ends.

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// benchPayload is the record size: 56-byte synthetic records in 64-byte
// slots.
const benchPayload = 56

// benchDir returns a directory for ring files, on tmpfs (/dev/shm) when
// there is one: a ring of 1<<21 slots on a disk-backed file would add
// page-cache writeback to the numbers.
func benchDir(tb testing.TB) string {
	tb.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "rfbench-"); err == nil {
			tb.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return tb.TempDir()
}

// benchSource is a ring written by the benchmark and served from a
// namespace.
type benchSource struct {
	tb   testing.TB
	ns   *netns.NS
	addr netip.Addr
	path string
	w    *shm.Writer
	rec  []byte
	srv  *replica.Server
	stop context.CancelFunc
	done chan error
}

// newBenchSource creates a fixed ring of 56-byte records in dir.
func newBenchSource(tb testing.TB, ns *netns.NS, addr netip.Addr, dir, name string, capacity uint64) *benchSource {
	tb.Helper()
	path := filepath.Join(dir, name)
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: benchPayload, Capacity: capacity}, shm.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	s := &benchSource{tb: tb, ns: ns, addr: addr, path: path, w: w, rec: make([]byte, benchPayload)}
	tb.Cleanup(func() { s.close(); w.Close() })
	return s
}

// serve starts a server for the ring in the source's namespace (Ring, Bind
// and Iface are filled in).
func (s *benchSource) serve(cfg replica.ServerConfig) {
	s.tb.Helper()
	cfg.Ring = s.path
	cfg.Bind = netip.AddrPortFrom(s.addr, 0).String()
	cfg.Iface = s.addr
	var srv *replica.Server
	if err := s.ns.Do(func() (err error) { srv, err = replica.NewServer(cfg); return err }); err != nil {
		s.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.srv, s.stop, s.done = srv, cancel, make(chan error, 1)
	go func() { s.done <- srv.Serve(ctx) }()
}

func (s *benchSource) close() {
	if s.srv == nil {
		return
	}
	s.stop()
	s.srv.Close()
	if err := <-s.done; err != nil {
		s.tb.Errorf("serve: %v", err)
	}
	s.srv = nil
}

// push writes n synthetic records as fast as it can.
func (s *benchSource) push(n int) {
	for range n {
		synth.Fill(s.rec, s.w.Next(), uint64(time.Now().UnixNano()))
		if _, err := s.w.Push(s.rec); err != nil {
			s.tb.Fatal(err)
		}
	}
}

// pushRate writes n synthetic records open loop at rate records per
// second: whenever it wakes it pushes every record due by then, then sleeps
// briefly. It returns the largest burst pushed at once (Go sleeps last at
// least tens of microseconds, often a millisecond, so the offered load is
// the rate in bursts).
func (s *benchSource) pushRate(n int, rate float64) (maxBurst int) {
	start := time.Now()
	for pushed := 0; pushed < n; {
		due := min(n, int(time.Since(start).Seconds()*rate)+1)
		if k := due - pushed; k > 0 {
			s.push(k)
			pushed = due
			maxBurst = max(maxBurst, k)
			continue
		}
		time.Sleep(20 * time.Microsecond)
	}
	return maxBurst
}

// benchMirror is a mirror connected in a namespace and run by an ordinary
// goroutine (see the file comment).
type benchMirror struct {
	tb   testing.TB
	m    *replica.Mirror
	path string
	stop context.CancelFunc
	done chan struct{}
	err  error
}

// startBenchMirror connects a mirror of src from ns (local interface
// iface), its ring at dir/name, and runs it.
func startBenchMirror(tb testing.TB, ns *netns.NS, iface netip.Addr, src *benchSource, dir, name string, cfg replica.MirrorConfig) *benchMirror {
	tb.Helper()
	cfg.Ring = filepath.Join(dir, name)
	cfg.Source = src.srv.Addr().String()
	cfg.Iface = iface
	cfg.Once = true
	m, err := replica.NewMirror(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := ns.Do(func() error { return m.Connect(context.Background()) }); err != nil {
		m.Close()
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mr := &benchMirror{tb: tb, m: m, path: cfg.Ring, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(mr.done)
		mr.err = m.Run(ctx)
	}()
	tb.Cleanup(mr.close)
	return mr
}

func (mr *benchMirror) close() {
	if mr.stop == nil {
		return
	}
	mr.stop()
	select {
	case <-mr.done:
	case <-time.After(10 * time.Second):
		mr.tb.Errorf("mirror did not stop")
	}
	mr.m.Close()
	mr.stop = nil
	if mr.err != nil {
		mr.tb.Errorf("mirror: %v", mr.err)
	}
}

// alive fails the benchmark if the mirror's connection ended.
func (mr *benchMirror) alive() {
	select {
	case <-mr.done:
		mr.tb.Fatalf("mirror stopped: %v (stats %+v)", mr.err, mr.m.Stats())
	default:
	}
}

// freshStats returns the mirror's counters once they include everything
// written so far (they are republished about every millisecond).
func (mr *benchMirror) freshStats(next uint64) replica.MirrorStats {
	deadline := time.Now().Add(2 * time.Second)
	for {
		st := mr.m.Stats()
		if st.Next >= next || time.Now().After(deadline) {
			time.Sleep(3 * time.Millisecond) // one more refresh
			return mr.m.Stats()
		}
		time.Sleep(time.Millisecond)
	}
}

// benchModes are the transports every replication benchmark covers.
var benchModes = []string{"tcp", "multicast", "unicast"}

// benchConfigs returns the server and mirror settings of a transport. dir
// tells the two directions of a ping-pong apart (their groups and ports
// differ, although they live in different namespaces).
func benchConfigs(mode string, dir int) (replica.ServerConfig, replica.MirrorConfig) {
	switch mode {
	case "multicast":
		g := netip.AddrPortFrom(netip.AddrFrom4([4]byte{239, 255, 0, byte(1 + dir)}), uint16(7401+dir))
		return replica.ServerConfig{Multicast: g}, replica.MirrorConfig{}
	case "unicast":
		return replica.ServerConfig{UDPPort: 7403 + 2*dir}, replica.MirrorConfig{Unicast: true}
	case "tcp":
		return replica.ServerConfig{}, replica.MirrorConfig{TCPOnly: true}
	}
	panic("unknown mode " + mode)
}

// pingPong is the closed loop of BenchmarkRoundTrip: ring A (ns A) is
// mirrored to A' (ns B); an echo goroutine copies every record of A' into
// ring B (ns B), mirrored back to B' (ns A), which the pinger busy-polls.
type pingPong struct {
	tb     testing.TB
	a, b   *benchSource
	ma, mb *benchMirror
	rdB    *shm.Reader // the pinger's reader of B'
	buf    []byte
	base   time.Time // stamps are nanoseconds since base (monotonic)

	echoStop context.CancelFunc
	echoDone chan error
}

// newPingPong builds the loop for a transport; spin selects busy-polling
// servers and mirrors.
func newPingPong(tb testing.TB, mode string, spin bool) *pingPong {
	tb.Helper()
	netns.Require(tb)
	p := netns.NewPair(tb)
	dir := benchDir(tb)
	pp := &pingPong{tb: tb, buf: make([]byte, benchPayload), base: time.Now()}

	pp.a = newBenchSource(tb, p.A, p.AAddr, dir, "A", 4096)
	pp.b = newBenchSource(tb, p.B, p.BAddr, dir, "B", 4096)
	for i, s := range []*benchSource{pp.a, pp.b} {
		scfg, _ := benchConfigs(mode, i)
		scfg.Linger = 0 // closed loop: no pacing
		scfg.Spin = spin
		s.serve(scfg)
	}
	_, mcfgA := benchConfigs(mode, 0)
	_, mcfgB := benchConfigs(mode, 1)
	mcfgA.Spin, mcfgB.Spin = spin, spin
	pp.ma = startBenchMirror(tb, p.B, p.BAddr, pp.a, dir, "A-mirror", mcfgA)
	pp.mb = startBenchMirror(tb, p.A, p.AAddr, pp.b, dir, "B-mirror", mcfgB)

	// The echo host's consumer sleeps on the mirror ring's futex (a
	// busy-polling echo as well as a busy-polling pinger would take both
	// CPUs of the machine from the servers and mirrors).
	ws := shm.FutexWait(64)
	rdA, err := shm.OpenReader(pp.ma.path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true, Wait: &ws})
	if err != nil {
		tb.Fatal(err)
	}
	if pp.rdB, err = shm.OpenReader(pp.mb.path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true}); err != nil {
		rdA.Close()
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pp.echoStop, pp.echoDone = cancel, make(chan error, 1)
	go func() {
		defer rdA.Close()
		buf := make([]byte, benchPayload)
		for {
			if _, err := rdA.RecvContext(ctx, buf); err != nil {
				pp.echoDone <- ctx.Err()
				return
			}
			if _, err := pp.b.w.Push(buf); err != nil {
				pp.echoDone <- err
				return
			}
		}
	}()
	// Registered after the sources and mirrors: runs before their cleanup.
	tb.Cleanup(func() {
		pp.echoStop()
		if err := <-pp.echoDone; err != nil && err != context.Canceled {
			tb.Errorf("echo: %v", err)
		}
		pp.rdB.Close()
	})
	return pp
}

// warmUp runs pings for at least d, and at least 10, until every path is
// live (unicast punches, TCP catch-ups ended).
func (pp *pingPong) warmUp(d time.Duration) {
	start := time.Now()
	for i := 0; i < 10 || time.Since(start) < d; i++ {
		pp.ping()
	}
}

// ping pushes one record stamped with the time into A and busy-polls B'
// until it comes back; it returns the round trip.
func (pp *pingPong) ping() time.Duration {
	seq := pp.a.w.Next()
	stamp := time.Since(pp.base)
	synth.Fill(pp.a.rec, seq, uint64(stamp))
	if _, err := pp.a.w.Push(pp.a.rec); err != nil {
		pp.tb.Fatal(err)
	}
	for i := 1; ; i++ {
		if _, ok := pp.rdB.TryRecv(pp.buf); ok {
			got, ts, err := synth.Check(pp.buf)
			if err != nil {
				pp.tb.Fatalf("echo of %d: %v", seq, err)
			}
			if got == seq {
				return time.Since(pp.base) - time.Duration(ts)
			}
			if got > seq {
				pp.tb.Fatalf("waiting for the echo of %d, got %d", seq, got)
			}
			continue // an older echo
		}
		if i%4096 == 0 {
			pp.check(seq, stamp)
		}
		runtime.Gosched() // busy-poll, but let the other goroutines run
	}
}

// check fails the benchmark if a ping is lost (10 s) or a part stopped.
func (pp *pingPong) check(seq uint64, stamp time.Duration) {
	pp.ma.alive()
	pp.mb.alive()
	select {
	case err := <-pp.echoDone:
		pp.echoDone <- err
		pp.tb.Fatalf("echo stopped: %v", err)
	default:
	}
	if time.Since(pp.base)-stamp > 10*time.Second {
		pp.tb.Fatalf("ping %d not back after 10 s: B' reader lapped %d\nA: %s\nA': %s\nB: %s\nB': %s", seq, pp.rdB.Lapped(),
			fmtStats(pp.a.srv.Stats()), fmtStats(pp.ma.m.Stats()), fmtStats(pp.b.srv.Stats()), fmtStats(pp.mb.m.Stats()))
	}
}

func fmtStats(v any) string { return fmt.Sprintf("%+v", v) }
