package replica_test

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/xdptest"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// opened remembers the transports of type T a test's factories opened.
type opened[T replica.Transport] struct {
	mu  sync.Mutex
	all []T
}

func (o *opened[T]) keep(t replica.Transport, err error) (replica.Transport, error) {
	if x, ok := t.(T); ok {
		o.mu.Lock()
		o.all = append(o.all, x)
		o.mu.Unlock()
	}
	return t, err
}

func (o *opened[T]) last(t *testing.T) T {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.all) == 0 {
		t.Fatalf("no %T transport was opened", *new(T))
	}
	return o.all[len(o.all)-1]
}

// watch wraps the factories of the configs to remember the transports of
// type T they open.
func watch[T replica.Transport](scfg *replica.ServerConfig, mcfg *replica.MirrorConfig) (srv, mir *opened[T]) {
	srv, mir = &opened[T]{}, &opened[T]{}
	if open := scfg.NewTransport; open != nil {
		scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) { return srv.keep(open(u)) }
	}
	if open := mcfg.NewTransport; open != nil {
		mcfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) { return mir.keep(open(s)) }
	}
	return srv, mir
}

// Datagrams really travel over AF_XDP in the xdp modes and interoperate
// with kernel UDP: the mirror names its transport and counts datagrams; the
// AF_XDP ends count the frames they moved and the program redirected.
func TestXDPCarriesDatagrams(t *testing.T) {
	modes := append(append(append([]string{}, xdpModes...), genericModes...), mixedModes...)
	eachMode(t, modes, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		src := newSource(t, p.A, p.AAddr, 8192)
		scfg, mcfg := transportConfigs(mode)
		so, mo := watch[*transport.XDP](&scfg, &mcfg)
		srv := src.serve(scfg)
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		src.pushPaced(2000, 50, 200*time.Microsecond)
		mr.waitFor(2000, 10*time.Second)
		ms, ss := mr.m.Stats(), srv.Stats()
		name := "udp"
		if scfg.NewTransport != nil {
			name = "xdp"
			xs, err := so.last(t).Stats()
			if err != nil || xs.Sent == 0 || xs.Socket.TXFrames == 0 || xs.Attach != attachMode(mode) {
				t.Fatalf("server AF_XDP sent nothing: %+v, %v", xs, err)
			}
		}
		if ss.Transport != name {
			t.Fatalf("server transport %q, want %q", ss.Transport, name)
		}
		want := transportLabel(mode)
		if mcfg.NewTransport != nil {
			xs, err := mo.last(t).Stats()
			if err != nil || xs.Received == 0 || xs.Program.Redirected < xs.Received || xs.Attach != attachMode(mode) {
				t.Fatalf("mirror AF_XDP received nothing: %+v, %v", xs, err)
			}
		}
		if ms.Datagrams == 0 || ms.Transport != want {
			t.Fatalf("mirror %+v: want datagrams over %q", ms, want)
		}
		wantAll(t, ms, 2000, want)
	})
}

func attachMode(mode string) string {
	if strings.HasPrefix(mode, "xdpgen-") {
		return "generic"
	}
	return "native"
}

// Loss injected by the steering program's fault map is repaired by NAKs,
// whether the mirror receives over AF_XDP (the program drops before
// redirecting) or over kernel UDP (the program is loaded with the flow and
// no socket: what it does not drop passes to the kernel).
func TestFaultMapLossRepaired(t *testing.T) {
	modes := []string{"xdp-multicast", "xdp-unicast", "xdpgen-unicast", "multicast", "xdpsrc-unicast"}
	eachMode(t, modes, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		src := newSource(t, p.A, p.AAddr, 16384)
		scfg, mcfg := transportConfigs(mode)
		_, mo := watch[*transport.XDP](&scfg, &mcfg)
		srv := src.serve(scfg)
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		var prog *bpf.Program
		if mcfg.NewTransport != nil {
			prog = mo.last(t).Program()
		} else {
			prog = kernelFaults(t, p, mr, mode)
		}
		if err := prog.SetFault(bpf.Fault{DropEvery: 7}); err != nil {
			t.Fatal(err)
		}
		src.pushPaced(6000, 50, 200*time.Microsecond)
		mr.waitFor(6000, 15*time.Second)
		c, err := prog.Counters()
		if err != nil {
			t.Fatal(err)
		}
		st, sst := mr.m.Stats(), srv.Stats()
		t.Logf("program %+v; mirror sent %d NAKs, %d records retransmitted", c, st.NaksSent, st.Retransmitted)
		if c.Dropped == 0 || st.NaksSent == 0 || st.Retransmitted == 0 || sst.NaksAnswered == 0 {
			t.Fatalf("no loss or no repair: program %+v, mirror %+v, server %+v", c, st, sst)
		}
		oneConnection(t, st)
		wantAll(t, st, 6000, "")
		sameSlots(t, src.path, mr.path, 1)
	})
}

// kernelFaults loads the steering program on the kernel UDP mirror's
// interface with its flow (the group, or its unicast port) and no socket.
func kernelFaults(t *testing.T, p *netns.Pair, mr *mirror, mode string) *bpf.Program {
	t.Helper()
	flow := bpf.Flow{Addr: mcastGroup().Addr(), Port: mcastGroup().Port()}
	if strings.HasSuffix(mode, "unicast") {
		flow = bpf.Flow{Addr: p.BAddr, Port: mirrorPort(t, p, mr)}
	}
	prog, _ := xdptest.Attach(t, p.B, p.BIf, bpf.ModeNative, flow)
	return prog
}

// mirrorPort finds the UDP port the kernel UDP mirror in B received on.
func mirrorPort(t *testing.T, p *netns.Pair, mr *mirror) uint16 {
	t.Helper()
	out, err := p.B.Exec("ss", "-Hunl", "src", p.BAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		for _, f := range strings.Fields(line) {
			if a, err := netip.ParseAddrPort(f); err == nil && a.Addr() == p.BAddr {
				return a.Port()
			}
		}
	}
	t.Fatalf("no UDP socket of the mirror on %v: %q", p.BAddr, out)
	return 0
}
