package transport_test

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/xdptest"
	"github.com/ringfire/ringfire/transport"
)

// pinProgram pins a steering program on ifname in ns (xdptest.Pin).
func pinProgram(t *testing.T, ns *netns.NS, ifname string, flows ...bpf.Flow) {
	t.Helper()
	xdptest.Pin(t, ns, ifname, flows...)
}

// pinned opens the pinned program of ifname in ns (closed at cleanup).
func pinned(t *testing.T, ns *netns.NS, ifname string) *bpf.Program {
	t.Helper()
	var p *bpf.Program
	if err := ns.Do(func() (err error) { p, err = bpf.OpenPinned(bpf.DefaultFS, ifname); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A transport on an interface whose program xdpctl pinned reuses it: its
// flow is added (tagged with the process), datagrams arrive over AF_XDP,
// the pinned flows stay, its socket is recorded; after Close the program
// is still attached with only the pinned flows and no sockets.
func TestPinnedProgramReused(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	static := bpf.Flow{Addr: netip.MustParseAddr("239.9.9.9"), Port: 9999}
	pinProgram(t, p.B, p.BIf, static)

	x := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)})
	st := stats(t, x)
	if st.Attach != "generic" {
		t.Errorf("attach %q, want the pinned program's generic", st.Attach)
	}
	own := bpf.Flow{Addr: p.BAddr, Port: x.LocalAddr().Port()}
	prog := pinned(t, p.B, p.BIf)
	fe, err := prog.FlowEntries()
	if err != nil {
		t.Fatal(err)
	}
	want := []bpf.FlowEntry{{Flow: own, Owner: os.Getpid()}, {Flow: static}}
	if !slices.Equal(fe, want) {
		t.Errorf("flows %v, want %v", fe, want)
	}
	so, err := prog.SocketOwners()
	if err != nil || len(so) != 1 || so[0].PID != os.Getpid() {
		t.Errorf("socket owners %+v, %v", so, err)
	}

	sendKernel(t, p.A, netip.AddrPortFrom(p.AAddr, 0), x.LocalAddr(), p.AIf, []byte("one"), []byte("two"))
	got := recvN(t, x, 2, 2048)
	if len(got) != 2 || string(got[0].data) != "one" || string(got[1].data) != "two" {
		t.Fatalf("received %v", got)
	}
	if c, _ := prog.Counters(); c.Redirected < 2 {
		t.Errorf("pinned program's counters %+v: the datagrams were not redirected", c)
	}

	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if fe, _ := prog.FlowEntries(); !slices.Equal(fe, []bpf.FlowEntry{{Flow: static}}) {
		t.Errorf("after Close: flows %v, want only the pinned one", fe)
	}
	if so, _ := prog.SocketOwners(); len(so) != 0 {
		t.Errorf("after Close: sockets %+v", so)
	}
	if out := exec(t, p.B, "ip", "-o", "link", "show", "dev", p.BIf); !strings.Contains(out, "xdpgeneric") {
		t.Errorf("after Close the program is gone: %s", out)
	}

	// A second transport (another "process" start) reuses it again.
	y := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)})
	sendKernel(t, p.A, netip.AddrPortFrom(p.AAddr, 0), y.LocalAddr(), p.AIf, []byte("three"))
	if got := recvN(t, y, 1, 2048); len(got) != 1 {
		t.Fatalf("second transport received %v", got)
	}
}

// A transport whose port is a flow xdpctl pinned does not remove that flow
// when it closes.
func TestPinnedFlowNotRemoved(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	static := bpf.Flow{Addr: p.BAddr, Port: 17700}
	pinProgram(t, p.B, p.BIf, static)
	x := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 17700)})
	sendKernel(t, p.A, netip.AddrPortFrom(p.AAddr, 0), x.LocalAddr(), p.AIf, []byte("x"))
	if got := recvN(t, x, 1, 2048); len(got) != 1 {
		t.Fatalf("received %v", got)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	prog := pinned(t, p.B, p.BIf)
	if fe, _ := prog.FlowEntries(); !slices.Equal(fe, []bpf.FlowEntry{{Flow: static}}) {
		t.Errorf("after Close: flows %v, want the pinned one", fe)
	}
}
