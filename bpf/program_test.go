package bpf

import (
	"math"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
)

func TestStrings(t *testing.T) {
	for m, want := range map[Mode]string{ModeAuto: "auto", ModeNative: "native", ModeGeneric: "generic", Mode(9): "Mode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
	f := Flow{Addr: netip.MustParseAddr("239.1.2.3"), Port: 7700}
	if got := f.String(); got != "239.1.2.3:7700" {
		t.Errorf("Flow.String() = %q", got)
	}
}

func TestFixedRatio(t *testing.T) {
	for _, r := range []float64{0, 0.25, 0.5, 1} {
		if got := fixedToRatio(ratioToFixed(r)); math.Abs(got-r) > 1e-9 {
			t.Errorf("ratio %v round trip = %v", r, got)
		}
	}
	if ratioToFixed(1) != math.MaxUint32 || ratioToFixed(0) != 0 {
		t.Errorf("ratio ends: %#x %#x", ratioToFixed(1), ratioToFixed(0))
	}
}

// TestMaps exercises the map API on a loaded, unattached program.
func TestMaps(t *testing.T) {
	netns.Require(t) // root
	p := load(t)

	if c := counters(t, p); c != (Counters{}) {
		t.Errorf("fresh counters %+v", c)
	}
	if f, err := p.Fault(); err != nil || f != (Fault{}) {
		t.Errorf("fresh fault %+v, %v", f, err)
	}
	if p.Mode() != ModeAuto || p.Ifindex() != 0 {
		t.Errorf("unattached: mode %v ifindex %d", p.Mode(), p.Ifindex())
	}
	isErr(t, p.Detach(), ErrNotAttached)

	flows := []Flow{
		{netip.MustParseAddr("239.1.2.3"), 7700},
		{netip.MustParseAddr("10.0.0.1"), 9000},
		{netip.MustParseAddr("10.0.0.1"), 80},
	}
	for _, f := range flows {
		if err := p.AddFlow(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AddFlow(flows[0]); err != nil {
		t.Errorf("adding a flow twice: %v", err)
	}
	got, err := p.Flows()
	want := []Flow{flows[2], flows[1], flows[0]}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Flows() = %v, %v; want %v", got, err, want)
	}
	if err := p.RemoveFlow(flows[1]); err != nil {
		t.Error(err)
	}
	isErr(t, p.RemoveFlow(flows[1]), ErrNotFound)
	if got, _ := p.Flows(); len(got) != 2 {
		t.Errorf("after remove: %v", got)
	}
	for _, f := range []Flow{
		{},
		{netip.MustParseAddr("::1"), 1},
		{netip.MustParseAddr("::ffff:10.0.0.1"), 1},
		{netip.MustParseAddr("0.0.0.0"), 1},
		{netip.MustParseAddr("10.0.0.1"), 0},
	} {
		isErr(t, p.AddFlow(f), ErrInvalid)
	}

	for _, f := range []Fault{{DropRatio: -0.1}, {DropRatio: 1.5}, {DropRatio: math.NaN()}} {
		isErr(t, p.SetFault(f), ErrInvalid)
	}
	in := Fault{DropEvery: 7, DropRatio: 0.25}
	if err := p.SetFault(in); err != nil {
		t.Fatal(err)
	}
	if f, err := p.Fault(); err != nil || f.DropEvery != 7 || math.Abs(f.DropRatio-0.25) > 1e-9 {
		t.Errorf("Fault() = %+v, %v; want %+v", f, err, in)
	}

	isErr(t, p.SetSocket(-1, 3), ErrInvalid)
	isErr(t, p.SetSocket(MaxQueues, 3), ErrInvalid)
	isErr(t, p.ClearSocket(0), ErrNotFound)
	// A UDP socket is not an AF_XDP socket.
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.Control(func(fd uintptr) { isErr(t, p.SetSocket(0, int(fd)), ErrInvalid) })
	if q, err := p.Sockets(); err != nil || len(q) != 0 {
		t.Errorf("Sockets() = %v, %v", q, err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err = p.Counters()
	isErr(t, err, ErrClosed)
	isErr(t, p.AddFlow(flows[0]), ErrClosed)
	isErr(t, p.Attach(1, ModeAuto), ErrClosed)
	_, err = p.Sockets()
	isErr(t, err, ErrClosed)
}

func TestAttach(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		want Mode
		ip   string // attachment `ip link` shows
	}{
		{ModeNative, ModeNative, "xdp"},
		{ModeGeneric, ModeGeneric, "xdpgeneric"},
		{ModeAuto, ModeNative, "xdp"}, // veth has native XDP
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.mode)
			if e.prog.Mode() != tc.want || e.prog.Ifindex() != e.ifindex {
				t.Errorf("Mode() = %v, Ifindex() = %d; want %v, %d", e.prog.Mode(), e.prog.Ifindex(), tc.want, e.ifindex)
			}
			if got := xdpOn(t, e.B, e.BIf); got != tc.ip {
				out, _ := e.B.Exec("ip", "-d", "link", "show", "dev", e.BIf)
				t.Errorf("ip link shows %q, want %q:\n%s", got, tc.ip, out)
			}
			// The same program again, and a second program in every mode.
			err := e.B.Do(func() error { return e.prog.Attach(e.ifindex, tc.mode) })
			isErr(t, err, ErrBusy)
			other := load(t)
			for _, m := range []Mode{ModeNative, ModeGeneric, ModeAuto} {
				err := e.B.Do(func() error { return other.Attach(e.ifindex, m) })
				isErr(t, err, ErrBusy)
				t.Logf("second program, %v: %v", m, err)
			}
			// Detach, reattach, close.
			if err := e.prog.Detach(); err != nil {
				t.Fatal(err)
			}
			if got := xdpOn(t, e.B, e.BIf); got != "" || e.prog.Mode() != ModeAuto || e.prog.Ifindex() != 0 {
				t.Errorf("after Detach: ip link shows %q, mode %v, ifindex %d", got, e.prog.Mode(), e.prog.Ifindex())
			}
			if err := e.B.Do(func() error { return e.prog.Attach(e.ifindex, tc.mode) }); err != nil {
				t.Fatal(err)
			}
			if err := e.prog.Close(); err != nil {
				t.Fatal(err)
			}
			if got := xdpOn(t, e.B, e.BIf); got != "" {
				t.Errorf("after Close: ip link shows %q", got)
			}
			if e.prog.Mode() != ModeAuto || e.prog.Ifindex() != 0 {
				t.Errorf("after Close: mode %v, ifindex %d", e.prog.Mode(), e.prog.Ifindex())
			}
		})
	}
}

// TestAttachNoNative: loopback has no native XDP; auto falls back to
// generic mode, native fails with ErrNotSupported.
func TestAttachNoNative(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	pair := netns.NewPair(t)
	idx := ifindex(t, pair.A, "lo")

	p := load(t)
	err := pair.A.Do(func() error { return p.Attach(idx, ModeNative) })
	isErr(t, err, ErrNotSupported)
	t.Logf("native on lo: %v", err)
	if p.Mode() != ModeAuto || p.Ifindex() != 0 {
		t.Errorf("after failed attach: mode %v, ifindex %d", p.Mode(), p.Ifindex())
	}
	if err := pair.A.Do(func() error { return p.Attach(idx, ModeAuto) }); err != nil {
		t.Fatal(err)
	}
	if p.Mode() != ModeGeneric {
		t.Errorf("auto on lo: mode %v, want generic", p.Mode())
	}
	if got := xdpOn(t, pair.A, "lo"); got != "xdpgeneric" {
		t.Errorf("ip link shows %q", got)
	}
	// Loopback traffic still works (TCP/ICMP pass).
	ping(t, pair.A, netip.MustParseAddr("127.0.0.1"), 2)

	// No such interface (in this namespace).
	q := load(t)
	err = pair.A.Do(func() error { return q.Attach(idx+100, ModeAuto) })
	isErr(t, err, ErrNotFound)
	isErr(t, q.Attach(0, ModeAuto), ErrInvalid)
	isErr(t, q.Attach(idx, Mode(7)), ErrInvalid)
}
