package replica_test

// Helpers shared by the tests and benchmarks of this package: transport
// settings, waits, sockets in a namespace, hand-made frames and a fake
// source that plays the protocol by script.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// The transport modes: every one, and those carrying datagrams.
var (
	allModes = []string{"tcp", "multicast", "unicast", "xdp-multicast", "xdp-unicast", "xdpgen-multicast", "xdpgen-unicast", "pkt-multicast", "pkt-unicast"}
	udpModes = allModes[1:]
)

// fromOldest starts a mirror at the oldest record the source retains.
var fromOldest = replica.From{Mode: replica.FromOldest}

// transportConfigs returns the server and mirror settings of a mode.
func transportConfigs(mode string) (replica.ServerConfig, replica.MirrorConfig) {
	return dirConfigs(mode, 0)
}

// dirConfigs returns the server and mirror settings of a mode for
// direction dir of a ping-pong (their groups and ports differ, although
// they live in different namespaces).
func dirConfigs(mode string, dir int) (scfg replica.ServerConfig, mcfg replica.MirrorConfig) {
	switch baseMode(mode) {
	case "multicast":
		scfg.Multicast = mcastGroupOf(dir)
	case "unicast":
		scfg.UDPPort, mcfg.Unicast = 7403+2*dir, true
	case "tcp":
		mcfg.TCPOnly = true
	default:
		panic("unknown mode " + mode)
	}
	xdpSides(mode, &scfg, &mcfg)
	return scfg, mcfg
}

func mcastGroup() netip.AddrPort { return mcastGroupOf(0) }

func mcastGroupOf(dir int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{239, 255, 0, byte(1 + dir)}), uint16(7401+dir))
}

// shmDir returns a temporary directory for ring files, removed by the
// cleanup, on tmpfs (/dev/shm) when there is one: a big ring on a
// disk-backed file would add page-cache writeback.
func shmDir(tb testing.TB) string {
	tb.Helper()
	if d, err := os.MkdirTemp("/dev/shm", "ringfire-test-"); err == nil {
		tb.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return tb.TempDir()
}

// poll calls cond every `every` until it holds (true) or timeout passes
// (false).
func poll(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}

// waitUntil polls cond every 2 ms until it holds, failing after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(timeout, 2*time.Millisecond, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// newUDPIn opens a kernel UDP transport with cfg inside ns (the caller
// closes it).
func newUDPIn(tb testing.TB, ns *netns.NS, cfg replica.UDPConfig) *replica.UDP {
	tb.Helper()
	var u *replica.UDP
	if err := ns.Do(func() (err error) { u, err = replica.NewUDP(cfg); return err }); err != nil {
		tb.Fatal(err)
	}
	return u
}

// listenUDP opens a UDP socket on addr:0 inside ns, closed by the cleanup.
func listenUDP(tb testing.TB, ns *netns.NS, addr netip.Addr) *net.UDPConn {
	tb.Helper()
	var c *net.UDPConn
	if err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// dialTCP opens a TCP connection to addr from ns, closed by the cleanup.
func dialTCP(t *testing.T, ns *netns.NS, addr string) *net.TCPConn {
	t.Helper()
	var c net.Conn
	if err := ns.Do(func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// frameReader gives c 5 s and returns a function reading its next frame
// (the payload is skipped).
func frameReader(t *testing.T, c net.Conn) func() wire.Header {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	return func() wire.Header {
		t.Helper()
		h, err := readHeader(br)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// readHeader reads the next frame's header and skips its payload.
func readHeader(br *bufio.Reader) (wire.Header, error) {
	var hb [wire.HeaderSize]byte
	if _, err := io.ReadFull(br, hb[:]); err != nil {
		return wire.Header{}, err
	}
	h, err := wire.ParseHeader(hb[:], 1<<20)
	if err != nil {
		return h, err
	}
	_, err = br.Discard(int(h.Len))
	return h, err
}

// wrapMirrorUDP returns a MirrorConfig.NewTransport making the mirror's
// kernel UDP transport and handing it to wrap.
func wrapMirrorUDP(wrap func(replica.Transport) replica.Transport) func(replica.DatagramSpec) (replica.Transport, error) {
	return wrapTransport(nil, wrap)
}

// wrapTransport returns a MirrorConfig.NewTransport making the mirror's
// transport with open (nil: kernel UDP) and handing it to wrap.
func wrapTransport(open func(replica.DatagramSpec) (replica.Transport, error), wrap func(replica.Transport) replica.Transport) func(replica.DatagramSpec) (replica.Transport, error) {
	if open == nil {
		open = replica.NewMirrorUDP
	}
	return func(s replica.DatagramSpec) (replica.Transport, error) {
		tr, err := open(s)
		if err != nil {
			return nil, err
		}
		return wrap(tr), nil
	}
}

// connectIn connects m from inside ns (closing it on failure).
func connectIn(tb testing.TB, ns *netns.NS, m *replica.Mirror) {
	tb.Helper()
	if err := ns.Do(func() error { return m.Connect(context.Background()) }); err != nil {
		m.Close()
		tb.Fatal(err)
	}
}

// runIn runs m inside ns until it returns or timeout passes.
func runIn(ns *netns.NS, m *replica.Mirror, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	<-ns.Go(func() { err = m.Run(ctx) })
	return err
}

// dataFrame is a DATA frame of synthetic records first..first+n-1 stamped
// with stamp, its flags the session byte.
func dataFrame(session uint8, first uint64, n int, stamp uint64) []byte {
	b := make([]byte, wire.HeaderSize+recordSize*n)
	wire.Header{Kind: wire.KindData, Flags: session, Count: uint16(n), Len: uint32(recordSize * n), Seq: first}.Put(b)
	for i := range n {
		synth.Fill(b[wire.HeaderSize+recordSize*i:wire.HeaderSize+recordSize*(i+1)], first+uint64(i), stamp)
	}
	return b
}

// fakeGeometry is the GEOMETRY of a fixed ring of 1024 synthetic records.
func fakeGeometry(t *testing.T) wire.Geometry {
	t.Helper()
	l, err := shm.NewLayout(shm.RingConfig{PayloadSize: recordSize, Capacity: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return wire.GeometryOf(l)
}

// fakeSource is a fake source in a namespace: it serves each accepted
// connection with the next script, after reading the mirror's HELLO.
type fakeSource struct {
	ln   net.Listener
	errc chan error
}

func newFakeSource(t *testing.T, ns *netns.NS, addr netip.Addr, scripts ...func(c net.Conn, start uint64) error) *fakeSource {
	t.Helper()
	f := &fakeSource{errc: make(chan error, len(scripts))}
	if err := ns.Do(func() (err error) {
		f.ln, err = net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.ln.Close() })
	go func() {
		for _, script := range scripts {
			c, err := f.ln.Accept()
			if err != nil {
				f.errc <- err
				return
			}
			b := make([]byte, wire.HeaderSize+16)
			_, err = io.ReadFull(c, b)
			h, _ := wire.ParseHeader(b, 16)
			if err == nil {
				_, err = wire.ParseHello(b[wire.HeaderSize:])
			}
			if err == nil {
				err = script(c, h.Seq)
			}
			c.Close()
			f.errc <- err
		}
	}()
	return f
}

// mirror creates a TCP-only mirror of the fake source from cfg (Source,
// Ring and TCPOnly filled in), closed by the cleanup; it returns the
// mirror and the path of its ring.
func (f *fakeSource) mirror(t *testing.T, cfg replica.MirrorConfig) (*replica.Mirror, string) {
	t.Helper()
	cfg.Source, cfg.TCPOnly = f.ln.Addr().String(), true
	cfg.Ring = filepath.Join(t.TempDir(), "mirror")
	m, err := replica.NewMirror(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, cfg.Ring
}
