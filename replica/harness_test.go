package replica_test

// The test harness shared by the tests and benchmarks of this package: a
// source (a ring written by the test and served from a namespace) and a
// mirror of it running in another namespace.

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// recordSize is the size of the synthetic records: 56 bytes in 64-byte
// slots.
const recordSize = 56

// source is a ring written by the test and served from a namespace.
type source struct {
	tb      testing.TB
	ns      *netns.NS
	addr    netip.Addr // the namespace's address
	path    string
	w       *shm.Writer
	rec     []byte
	publish func(seq uint64) error // writes record seq, the next one
	srv     *replica.Server
	stop    context.CancelFunc
	done    chan error
}

// pairSource makes a pair of namespaces (skipping the test without root)
// and a source of the given capacity in p.A.
func pairSource(t *testing.T, capacity uint64) (*netns.Pair, *source) {
	t.Helper()
	netns.Require(t)
	p := netns.NewPair(t)
	return p, newSource(t, p.A, p.AAddr, capacity)
}

// lanSource makes a LAN of n namespaces (skipping the test without root)
// and a source of the given capacity on its first host.
func lanSource(t *testing.T, n int, capacity uint64) (*netns.LAN, *source) {
	t.Helper()
	netns.Require(t)
	lan := netns.NewLAN(t, n)
	return lan, newSource(t, lan.Hosts[0], lan.Addrs[0], capacity)
}

// eachMode runs test as a subtest for each mode (skipping without root).
func eachMode(t *testing.T, modes []string, test func(t *testing.T, mode string)) {
	t.Helper()
	netns.Require(t)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}

// newSource creates a fixed ring of synthetic records in a temporary
// directory, to be served from ns.
func newSource(t *testing.T, ns *netns.NS, addr netip.Addr, capacity uint64) *source {
	t.Helper()
	return newSourceAt(t, ns, addr, capacity, filepath.Join(t.TempDir(), "source"))
}

// newSourceAt is newSource with the ring at path.
func newSourceAt(tb testing.TB, ns *netns.NS, addr netip.Addr, capacity uint64, path string) *source {
	tb.Helper()
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: recordSize, Capacity: capacity}, shm.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	s := &source{tb: tb, ns: ns, addr: addr, path: path, w: w, rec: make([]byte, recordSize)}
	s.publish = s.pushSynth
	tb.Cleanup(func() { s.close(); w.Close() })
	return s
}

// pushSynth writes synthetic record seq stamped with the time.
func (s *source) pushSynth(seq uint64) error {
	synth.Fill(s.rec, seq, uint64(time.Now().UnixNano()))
	_, err := s.w.Push(s.rec)
	return err
}

// push writes records next..next+n-1 without pause.
func (s *source) push(n int) {
	for range n {
		if err := s.publish(s.w.Next()); err != nil {
			s.tb.Fatal(err)
		}
	}
}

// pushPaced writes n records in bursts of burst, sleeping pause between.
func (s *source) pushPaced(n, burst int, pause time.Duration) {
	for n > 0 {
		k := min(n, burst)
		s.push(k)
		n -= k
		time.Sleep(pause)
	}
}

// serve starts a server in the source namespace (Ring is filled in, and
// Bind and Iface unless set).
func (s *source) serve(cfg replica.ServerConfig) *replica.Server {
	s.tb.Helper()
	cfg.Ring = s.path
	if cfg.Bind == "" {
		cfg.Bind = netip.AddrPortFrom(s.addr, 0).String()
	}
	if !cfg.Iface.IsValid() {
		cfg.Iface = s.addr
	}
	var srv *replica.Server
	if err := s.ns.Do(func() (err error) { srv, err = replica.NewServer(cfg); return err }); err != nil {
		s.tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.srv, s.stop, s.done = srv, cancel, make(chan error, 1)
	go func() { s.done <- srv.Serve(ctx) }()
	return srv
}

// drained waits until the server has sent every record of its ring as
// datagrams (at once for TCP-only), so records pushed before a mirror joins
// cannot reach it over the datagram stream.
func (s *source) drained() {
	s.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.srv.Stats().Lag != 0 {
		if time.Now().After(deadline) {
			s.tb.Fatalf("server never sent its backlog: %+v", s.srv.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// close stops the server (a restart calls serve again).
func (s *source) close() {
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

// mirror is a running mirror of a source.
type mirror struct {
	tb     testing.TB
	m      *replica.Mirror
	path   string
	faults *faulty.Transport
	stop   context.CancelFunc
	done   <-chan struct{}
	err    error
}

// startMirror runs a mirror of src in ns. faults (optional) wraps its
// datagram transport.
func startMirror(t *testing.T, ns *netns.NS, iface netip.Addr, src *source, cfg replica.MirrorConfig, faults *faulty.Faults) *mirror {
	t.Helper()
	if cfg.Ring == "" {
		cfg.Ring = filepath.Join(t.TempDir(), "mirror")
	}
	if cfg.Reconnect == 0 {
		cfg.Reconnect = 50 * time.Millisecond
	}
	mr := &mirror{tb: t, path: cfg.Ring}
	if faults != nil {
		cfg.NewTransport = wrapTransport(cfg.NewTransport, func(tr replica.Transport) replica.Transport {
			mr.faults = faulty.Wrap(tr, *faults)
			return mr.faults
		})
	}
	mr.launch(newMirrorOf(t, src, iface, cfg), ns.Go)
	return mr
}

// newMirrorOf makes a mirror of src on local interface iface from cfg
// (Source and Iface filled in).
func newMirrorOf(tb testing.TB, src *source, iface netip.Addr, cfg replica.MirrorConfig) *replica.Mirror {
	tb.Helper()
	cfg.Source = src.srv.Addr().String()
	cfg.Iface = iface
	m, err := replica.NewMirror(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// launch runs m with goFn, which returns a channel closed when the run
// ends; the test's cleanup stops it.
func (mr *mirror) launch(m *replica.Mirror, goFn func(func()) <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	mr.m, mr.stop = m, cancel
	mr.done = goFn(func() { mr.err = m.Run(ctx) })
	mr.tb.Cleanup(mr.close)
}

func (mr *mirror) close() {
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

// waitFor waits until the mirror has written every record up to seq.
func (mr *mirror) waitFor(seq uint64, timeout time.Duration) replica.MirrorStats {
	mr.tb.Helper()
	var st replica.MirrorStats
	if !poll(timeout, 2*time.Millisecond, func() bool { st = mr.m.Stats(); return st.Next > seq }) {
		mr.tb.Fatalf("mirror stuck at %d waiting for %d: %+v", st.Next, seq, st)
	}
	return st
}

// waitStats polls the mirror's stats until ok holds, failing after timeout.
func (mr *mirror) waitStats(what string, timeout time.Duration, ok func(replica.MirrorStats) bool) replica.MirrorStats {
	mr.tb.Helper()
	var st replica.MirrorStats
	if !poll(timeout, 2*time.Millisecond, func() bool { st = mr.m.Stats(); return ok(st) }) {
		mr.tb.Fatalf("%s: not reached after %v: %+v", what, timeout, st)
	}
	return st
}

// connected waits for the mirror's first completed handshake.
func (mr *mirror) connected() replica.MirrorStats {
	mr.tb.Helper()
	return mr.waitStats("first connection", 10*time.Second, func(st replica.MirrorStats) bool { return st.Connects > 0 })
}

// waitDatagrams waits until every mirror receives datagrams (a unicast
// mirror has punched, a multicast mirror has joined the group).
func waitDatagrams(t *testing.T, mrs ...*mirror) {
	t.Helper()
	for _, mr := range mrs {
		waitUntil(t, 10*time.Second, "datagrams at the mirror", func() bool { return mr.m.Stats().Datagrams > 0 })
	}
}

// finish takes the server's stats, stops the mirror and returns both,
// logged.
func finish(t *testing.T, srv *replica.Server, mr *mirror) (replica.ServerStats, replica.MirrorStats) {
	t.Helper()
	sst := srv.Stats()
	mr.close()
	st := mr.m.Stats()
	t.Logf("server %+v", sst)
	t.Logf("mirror %+v", st)
	return sst, st
}

// finishAll waits until every mirror has written up to last, takes the
// server's stats and stops the mirrors; each must then hold the source's
// records 1..last, taken over transport on one connection.
func finishAll(t *testing.T, src *source, mrs []*mirror, last uint64, transport string) replica.ServerStats {
	t.Helper()
	for _, mr := range mrs {
		mr.waitFor(last, 10*time.Second)
	}
	sst := src.srv.Stats()
	t.Logf("server %+v", sst)
	for i, mr := range mrs {
		mr.close()
		st := mr.m.Stats()
		t.Logf("mirror %d %+v", i+1, st)
		sameSlots(t, src.path, mr.path, 1)
		wantAll(t, st, last, transport)
		oneConnection(t, st)
	}
	return sst
}

// serveMirrored serves src from p.A with the settings of mode (adjusted by
// tweaks) and starts a mirror of it from `from` in p.B.
func serveMirrored(t *testing.T, p *netns.Pair, src *source, mode string, from replica.From, faults *faulty.Faults, tweaks ...func(*replica.ServerConfig)) (*replica.Server, *mirror) {
	t.Helper()
	scfg, mcfg := transportConfigs(mode)
	for _, tweak := range tweaks {
		if tweak != nil {
			tweak(&scfg)
		}
	}
	srv := src.serve(scfg)
	mcfg.From = from
	return srv, startMirror(t, p.B, p.BAddr, src, mcfg, faults)
}
