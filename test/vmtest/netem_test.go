//go:build vmtest

package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
	"github.com/ringfire/ringfire/transport"
)

// netemArgs is the impairment both NICs get on egress: 5 ms delay with
// 2 ms jitter, 5 % loss, and 25 % of the packets sent at once, overtaking
// the delayed ones (reordering).
var netemArgs = []string{"delay", "5ms", "2ms", "loss", "5%", "reorder", "25%", "50%"}

const recordSize = 56 // synthetic records in 64-byte slots

// A source in namespace A serves a ring to a mirror in namespace B across
// the virtio-net NICs while netem delays, jitters, drops and reorders what
// both NICs send (datagrams, NAKs, TCP). The mirror must end with a ring
// identical to the source's, having repaired the losses with NAKs. In
// "xdp-mirror" the mirror receives over AF_XDP in native mode (netem on
// the source's NIC still impairs the kernel UDP datagrams it sends; an
// AF_XDP sender would bypass the qdisc, so the source stays kernel UDP).
func TestReplicationUnderNetem(t *testing.T) {
	a, b := guest(t)
	for _, s := range []side{a, b} {
		if _, err := s.exec("tc", "qdisc", "replace", "dev", s.If, "root", "netem"); err != nil {
			t.Fatal(err) // no sch_netem, or no tc
		}
		s.exec("tc", "qdisc", "del", "dev", s.If, "root")
	}
	modes := []struct {
		name string
		mcfg func(*replica.ServerConfig, *replica.MirrorConfig)
	}{
		{"unicast", func(s *replica.ServerConfig, m *replica.MirrorConfig) { s.UDPPort, m.Unicast = 7403, true }},
		{"multicast", func(s *replica.ServerConfig, m *replica.MirrorConfig) {
			s.Multicast = netipAddrPort("239.255.0.1:7401")
		}},
		{"xdp-mirror", func(s *replica.ServerConfig, m *replica.MirrorConfig) {
			s.UDPPort, m.Unicast = 7405, true
			m.NewTransport = func(ds replica.DatagramSpec) (replica.Transport, error) {
				return transport.NewXDP(transport.XDPForMirror(transport.XDPConfig{Iface: b.If, Mode: bpf.ModeNative}, ds))
			}
		}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			var scfg replica.ServerConfig
			var mcfg replica.MirrorConfig
			mode.mcfg(&scfg, &mcfg)
			replicate(t, a, b, scfg, mcfg, mode.name == "xdp-mirror")
		})
	}
}

func replicate(t *testing.T, a, b side, scfg replica.ServerConfig, mcfg replica.MirrorConfig, xdpMirror bool) {
	const records = 4000
	dir := t.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "vmtest-"); err == nil {
		dir = d
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	src, dst := filepath.Join(dir, "source"), filepath.Join(dir, "mirror")
	w, err := shm.Create(src, shm.RingConfig{PayloadSize: recordSize, Capacity: 16384}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	scfg.Ring, scfg.Bind, scfg.Iface = src, netipAddrPort(a.Addr.String()+":0").String(), a.Addr
	var srv *replica.Server
	if err := a.do(func() (err error) { srv, err = replica.NewServer(scfg); return err }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		srv.Close()
		if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("serve: %v", err)
		}
	}()

	mcfg.Source, mcfg.Ring, mcfg.Iface = srv.Addr().String(), dst, b.Addr
	mcfg.Reconnect, mcfg.From = 50*time.Millisecond, replica.From{Mode: replica.FromOldest}
	m, err := replica.NewMirror(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	var runErr error
	mctx, mstop := context.WithCancel(context.Background())
	done := b.goIn(t, func() { runErr = m.Run(mctx) })
	defer func() {
		mstop()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("mirror did not stop")
		}
		m.Close()
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			t.Errorf("mirror: %v", runErr)
		}
	}()
	if !poll(30*time.Second, 5*time.Millisecond, func() bool { return m.Stats().Connects > 0 }) {
		t.Fatalf("mirror never connected: %+v", m.Stats())
	}

	// Impair both NICs only now: the handshake is not what is tested.
	for _, s := range []side{a, b} {
		if _, err := s.exec(append([]string{"tc", "qdisc", "replace", "dev", s.If, "root", "netem"}, netemArgs...)...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.exec("tc", "qdisc", "del", "dev", s.If, "root") })
	}

	rec := make([]byte, recordSize)
	start := time.Now()
	for i := 0; i < records; i++ {
		synth.Fill(rec, w.Next(), uint64(time.Now().UnixNano()))
		if _, err := w.Push(rec); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	last := w.Next() - 1
	var st replica.MirrorStats
	if !poll(90*time.Second, 10*time.Millisecond, func() bool { st = m.Stats(); return st.Next > last }) {
		t.Fatalf("mirror stuck at %d of %d: %+v; server %+v", st.Next, last, st, srv.Stats())
	}
	sst := srv.Stats()
	t.Logf("%d records in %v; mirror: %d datagrams, %d NAKs, %d records retransmitted, %d duplicates, %d connects, transport %s; server: %d NAKs answered",
		records, time.Since(start).Round(time.Millisecond), st.Datagrams, st.NaksSent, st.Retransmitted, st.Duplicates, st.Connects, st.Transport, sst.NaksAnswered)
	for _, s := range []side{a, b} {
		dropped, sent := netemCounters(t, s)
		t.Logf("netem on %s in %s: %d packets sent, %d dropped", s.If, s.NS, sent, dropped)
		// Too few packets leave by a mirror's side (its NAKs and ACKs) for
		// no drop to mean anything at a few per cent of loss.
		if dropped == 0 && sent >= 200 {
			t.Errorf("netem on %s dropped nothing of %d packets: the impairment did not apply", s.If, sent)
		}
	}
	if st.Datagrams == 0 || st.NaksSent == 0 || st.Retransmitted == 0 || sst.NaksAnswered == 0 {
		t.Fatalf("no datagrams, or no NAK repair: mirror %+v, server %+v", st, sst)
	}
	if st.Gaps != 0 {
		t.Fatalf("mirror skipped %d records (GAP) although the source retained them all: %+v", st.Gaps, st)
	}
	if xdpMirror && !strings.HasPrefix(st.Transport, "xdp") {
		t.Fatalf("mirror received over %q, want xdp", st.Transport)
	}
	sameRings(t, src, dst)
}

// sameRings checks that the mirror ring holds exactly the source's records
// up to the source's write_seq.
func sameRings(t *testing.T, src, dst string) {
	t.Helper()
	ra, err := shm.Open(src, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := shm.Open(dst, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	w := ra.WriteSeq()
	if rb.WriteSeq() != w {
		t.Fatalf("mirror write_seq %d, source %d", rb.WriteSeq(), w)
	}
	pa := make([]byte, ra.Layout().PayloadSize())
	pb := make([]byte, len(pa))
	for seq := ra.Oldest(); seq <= w; seq++ {
		sa, _ := ra.ReadSlot(seq, pa)
		sb, _ := rb.ReadSlot(seq, pb)
		if sa != shm.SlotReady || sb != shm.SlotReady || !bytes.Equal(pa, pb) {
			t.Fatalf("record %d: source %v, mirror %v, equal %v", seq, sa, sb, bytes.Equal(pa, pb))
		}
	}
}

var netemRE = regexp.MustCompile(`Sent \d+ bytes (\d+) pkt \(dropped (\d+),`)

// netemCounters reads the packets sent and dropped by the root qdisc.
func netemCounters(t *testing.T, s side) (dropped, sent uint64) {
	t.Helper()
	out, err := s.exec("tc", "-s", "qdisc", "show", "dev", s.If, "root")
	if err != nil {
		t.Fatal(err)
	}
	m := netemRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("tc -s qdisc show dev %s: no counters in %q", s.If, out)
	}
	sent, _ = strconv.ParseUint(m[1], 10, 64)
	dropped, _ = strconv.ParseUint(m[2], 10, 64)
	return dropped, sent
}

func netipAddrPort(s string) netip.AddrPort {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		panic(fmt.Sprintf("bad address %q: %v", s, err))
	}
	return ap
}
