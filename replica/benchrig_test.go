package replica_test

// Rig of the replication benchmarks (bench_test.go): sources and mirrors
// (harness_test.go) running in the two namespaces of a netns.Pair, with
// their rings on tmpfs.
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
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
	"github.com/ringfire/ringfire/transport"
)

// benchRecordSize is the record size of the benchmarks: 64-byte synth
// records (their whole 64 bytes are payload: seq, stamp, checksum and 40
// bytes of filler), in 72-byte ring slots (8 bytes of slot header). A
// datagram of the default MTU (1472 bytes of UDP payload, a 16-byte frame
// header) carries 22 of them. The tests use 56-byte records (recordSize).
const benchRecordSize = 64

// newBenchSource is newSourceAt with benchRecordSize records.
func newBenchSource(tb testing.TB, ns *netns.NS, addr netip.Addr, capacity uint64, path string) *source {
	tb.Helper()
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: benchRecordSize, Capacity: capacity}, shm.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	s := &source{tb: tb, ns: ns, addr: addr, path: path, w: w, rec: make([]byte, benchRecordSize)}
	var stamp uint64
	s.publish = func(seq uint64) error {
		// One clock read per stampEvery records: on this VM a read costs
		// about half a microsecond, which would cap the producer near 2 M
		// records/s, below what the transports carry.
		if seq%stampEvery == 0 || stamp == 0 {
			stamp = uint64(time.Now().UnixNano())
		}
		synth.Fill(s.rec, seq, stamp)
		_, err := s.w.Push(s.rec)
		return err
	}
	tb.Cleanup(func() { s.close(); w.Close() })
	return s
}

// stampEvery is how many records of a benchmark source share a timestamp.
const stampEvery = 64

// pushRate writes n synthetic records open loop at rate records per
// second: whenever it wakes it pushes every record due by then, then sleeps
// briefly. It returns the largest burst pushed at once (Go sleeps last at
// least tens of microseconds, often a millisecond, so the offered load is
// the rate in bursts).
func (s *source) pushRate(n int, rate float64) (maxBurst int) {
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

// startBenchMirror connects a mirror of src from ns (local interface
// iface), its ring at dir/name, and runs it in an ordinary goroutine (see
// the file comment).
func startBenchMirror(tb testing.TB, ns *netns.NS, iface netip.Addr, src *source, dir, name string, cfg replica.MirrorConfig) *mirror {
	tb.Helper()
	cfg.Ring = filepath.Join(dir, name)
	cfg.Once = true
	mr := &mirror{tb: tb, path: cfg.Ring}
	m := newMirrorOf(tb, src, iface, cfg)
	connectIn(tb, ns, m)
	mr.launch(m, func(run func()) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			run()
		}()
		return done
	})
	return mr
}

// alive fails the benchmark if the mirror's connection ended.
func (mr *mirror) alive() {
	select {
	case <-mr.done:
		mr.tb.Fatalf("mirror stopped: %v (stats %+v)", mr.err, mr.m.Stats())
	default:
	}
}

// freshStats returns the mirror's counters once they include everything
// written so far (they are republished about every millisecond).
func (mr *mirror) freshStats(next uint64) replica.MirrorStats {
	poll(2*time.Second, time.Millisecond, func() bool { return mr.m.Stats().Next >= next })
	time.Sleep(3 * time.Millisecond) // one more refresh
	return mr.m.Stats()
}

// pingPong is the closed loop of BenchmarkRoundTrip: ring A (ns A) is
// mirrored to A' (ns B); an echo goroutine copies every record of A' into
// ring B (ns B'), mirrored back to B' (ns A'), which the pinger
// busy-polls. A–B and B'–A' are two veth pairs (see newPingPong).
type pingPong struct {
	tb     testing.TB
	a, b   *source
	ma, mb *mirror
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
	// One veth pair per direction: an AF_XDP transport owns its interface's
	// XDP program, so a namespace cannot hold a source's and a mirror's
	// AF_XDP transport on one interface. Every mode runs on the same
	// topology. Ring A's source is in p.A, its mirror in p.B; ring B's
	// source is in q.B, its mirror in q.A (the echo and the pinger are in
	// this process: rings are files, namespaces only hold sockets).
	p, q := netns.NewPair(tb), netns.NewPair(tb)
	dir := shmDir(tb)
	pp := &pingPong{tb: tb, buf: make([]byte, benchRecordSize), base: time.Now()}

	pp.a = newBenchSource(tb, p.A, p.AAddr, 4096, filepath.Join(dir, "A"))
	pp.b = newBenchSource(tb, q.B, q.BAddr, 4096, filepath.Join(dir, "B"))
	for i, s := range []*source{pp.a, pp.b} {
		scfg, _ := benchConfigs(mode, i)
		scfg.Linger = 0 // closed loop: no pacing
		scfg.Spin = spin
		s.serve(scfg)
	}
	_, mcfgA := benchConfigs(mode, 0)
	_, mcfgB := benchConfigs(mode, 1)
	mcfgA.Spin, mcfgB.Spin = spin, spin
	pp.ma = startBenchMirror(tb, p.B, p.BAddr, pp.a, dir, "A-mirror", mcfgA)
	pp.mb = startBenchMirror(tb, q.A, q.AAddr, pp.b, dir, "B-mirror", mcfgB)

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
		buf := make([]byte, benchRecordSize)
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

// transportProbe keeps the datagram transports a server and a mirror
// opened, to log their counters (AF_XDP's say where datagrams were lost).
type transportProbe struct {
	mu   sync.Mutex
	open []replica.Transport
}

func (tp *transportProbe) keep(t replica.Transport) replica.Transport {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.open = append(tp.open, t)
	return t
}

// wrap makes the configs hand their transports to tp (AF_XDP modes only:
// kernel UDP has no counters of its own).
func (tp *transportProbe) wrap(scfg *replica.ServerConfig, mcfg *replica.MirrorConfig) {
	if open := scfg.NewTransport; open != nil {
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			t, err := open(u)
			if err != nil {
				return nil, err
			}
			return tp.keep(t), nil
		}
	}
	if mcfg.NewTransport != nil {
		mcfg.NewTransport = wrapTransport(mcfg.NewTransport, tp.keep)
	}
}

// log logs the counters of the transports that have them.
func (tp *transportProbe) log(tb testing.TB) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, t := range tp.open {
		if x, ok := t.(*transport.XDP); ok {
			if st, err := x.Stats(); err == nil {
				tb.Logf("%s transport: %+v", x.LocalAddr(), st)
			}
		}
	}
}

// benchConfigs are dirConfigs with the AF_XDP transports opened as
// `ringfire serve/mirror --xdp veth0` opens them: the xdp package's default
// socket sizes (2048-entry rings; the tests use 1024 to fit many sockets).
func benchConfigs(mode string, dir int) (replica.ServerConfig, replica.MirrorConfig) {
	scfg, mcfg := dirConfigs(mode, dir)
	if scfg.NewTransport != nil {
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			return transport.NewXDP(transport.XDPForServer(transport.XDPConfig{Iface: testIface}, u))
		}
	}
	if mcfg.NewTransport != nil {
		mcfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) {
			return transport.NewXDP(transport.XDPForMirror(transport.XDPConfig{Iface: testIface}, s))
		}
	}
	return scfg, mcfg
}
