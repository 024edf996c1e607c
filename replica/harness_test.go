package replica_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// source is a ring written by the test and served from a namespace.
type source struct {
	t    *testing.T
	ns   *netns.NS
	addr netip.Addr // the namespace's address
	path string
	w    *shm.Writer
	rec  []byte
	srv  *replica.Server
	stop context.CancelFunc
	done chan error
}

// newSource creates a fixed ring of 56-byte synthetic records (64-byte
// slots) in dir, served from ns with cfg (Ring and Bind are filled in).
func newSource(t *testing.T, ns *netns.NS, addr netip.Addr, capacity uint64) *source {
	t.Helper()
	path := filepath.Join(t.TempDir(), "source")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 56, Capacity: capacity}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &source{t: t, ns: ns, addr: addr, path: path, w: w, rec: make([]byte, 56)}
	t.Cleanup(func() { s.close(); w.Close() })
	return s
}

// push writes records next..next+n-1 of the synthetic stream.
func (s *source) push(n int) {
	for range n {
		synth.Fill(s.rec, s.w.Next(), uint64(time.Now().UnixNano()))
		if _, err := s.w.Push(s.rec); err != nil {
			s.t.Fatal(err)
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

// serve starts a server in the source namespace.
func (s *source) serve(cfg replica.ServerConfig) *replica.Server {
	s.t.Helper()
	cfg.Ring = s.path
	if cfg.Bind == "" {
		cfg.Bind = netip.AddrPortFrom(s.addr, 0).String()
	}
	if !cfg.Iface.IsValid() {
		cfg.Iface = s.addr
	}
	var srv *replica.Server
	if err := s.ns.Do(func() (err error) { srv, err = replica.NewServer(cfg); return err }); err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.srv, s.stop, s.done = srv, cancel, make(chan error, 1)
	go func() { s.done <- srv.Serve(ctx) }()
	return srv
}

// close stops the server (a restart calls serve again).
func (s *source) close() {
	if s.srv == nil {
		return
	}
	s.stop()
	s.srv.Close()
	if err := <-s.done; err != nil {
		s.t.Errorf("serve: %v", err)
	}
	s.srv = nil
}

// mirror is a mirror running in a namespace.
type mirror struct {
	t      *testing.T
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
	cfg.Source = src.srv.Addr().String()
	cfg.Iface = iface
	if cfg.Reconnect == 0 {
		cfg.Reconnect = 50 * time.Millisecond
	}
	mr := &mirror{t: t, path: cfg.Ring}
	if faults != nil {
		cfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) {
			tr, err := replica.NewMirrorUDP(s)
			if err != nil {
				return nil, err
			}
			mr.faults = faulty.Wrap(tr, *faults)
			return mr.faults, nil
		}
	}
	m, err := replica.NewMirror(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mr.m, mr.stop = m, cancel
	mr.done = ns.Go(func() { mr.err = m.Run(ctx) })
	t.Cleanup(mr.close)
	return mr
}

func (mr *mirror) close() {
	if mr.stop == nil {
		return
	}
	mr.stop()
	select {
	case <-mr.done:
	case <-time.After(10 * time.Second):
		mr.t.Errorf("mirror did not stop")
	}
	mr.m.Close()
	mr.stop = nil
	if mr.err != nil {
		mr.t.Errorf("mirror: %v", mr.err)
	}
}

// waitFor waits until the mirror has written every record up to seq.
func (mr *mirror) waitFor(seq uint64, timeout time.Duration) replica.MirrorStats {
	mr.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := mr.m.Stats()
		if st.Next > seq {
			return st
		}
		if time.Now().After(deadline) {
			mr.t.Fatalf("mirror stuck at %d waiting for %d: %+v", st.Next, seq, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// readAll reads every record the ring at path retains, in order, checking
// each synthetic record's checksum and sequence.
func readAll(t *testing.T, path string) (seqs []uint64, lapped uint64) {
	t.Helper()
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	buf := make([]byte, rd.Ring().Layout().PayloadSize())
	for {
		seq, ok := rd.TryRecv(buf)
		if !ok {
			return seqs, rd.Lapped()
		}
		got, _, err := synth.Check(buf)
		if err != nil || got != seq {
			t.Fatalf("record %d: carries %d, %v", seq, got, err)
		}
		if len(seqs) > 0 && seq <= seqs[len(seqs)-1] {
			t.Fatalf("record %d after %d", seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, seq)
	}
}

// sameSlots checks that the mirror ring holds, for every sequence from
// `from` to the source's write_seq, exactly the source's slot bytes.
func sameSlots(t *testing.T, src, dst string, from uint64) {
	t.Helper()
	a, err := shm.Open(src, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := shm.Open(dst, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := sameGeometry(a.Layout(), b.Layout()); err != nil {
		t.Fatal(err)
	}
	w := a.WriteSeq()
	if b.WriteSeq() != w {
		t.Fatalf("mirror write_seq %d, source %d", b.WriteSeq(), w)
	}
	pa := make([]byte, a.Layout().PayloadSize())
	pb := make([]byte, len(pa))
	for seq := max(from, a.Oldest()); seq <= w; seq++ {
		sa, _ := a.ReadSlot(seq, pa)
		sb, _ := b.ReadSlot(seq, pb)
		if sa != shm.SlotReady || sb != shm.SlotReady || !bytes.Equal(pa, pb) {
			t.Fatalf("record %d: source %v, mirror %v, equal %v", seq, sa, sb, bytes.Equal(pa, pb))
		}
	}
}

// sameGeometry compares the layouts a mirror must share with its source.
func sameGeometry(src, dst shm.Layout) error {
	want := dst
	want.Flags = src.Flags
	if want != src {
		return fmt.Errorf("mirror layout %+v, source %+v", dst, src)
	}
	if dst.Flags&(shm.FlagSparse|shm.FlagLatestWins|shm.FlagSPMC) != shm.FlagSparse|shm.FlagLatestWins|shm.FlagSPMC {
		return errors.New("mirror ring is not SPMC | LATEST_WINS | SPARSE")
	}
	return nil
}

func mcastGroup() netip.AddrPort { return netip.MustParseAddrPort("239.255.0.1:7401") }
