package bpf

import (
	"net/netip"
	"os"
	"slices"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
)

// pinEnv is a veth pair whose B end has the program attached and pinned
// under DefaultFS (mounted if missing), unpinned when the test ends.
func pinEnv(t *testing.T) (*netns.Pair, string, int) {
	t.Helper()
	netns.Require(t)
	if _, err := MountFS(DefaultFS); err != nil {
		t.Fatal(err)
	}
	pr := netns.NewPair(t)
	idx := ifindex(t, pr.B, pr.BIf)
	var dir string
	err := pr.B.Do(func() error {
		var err error
		if dir, err = PinDir(DefaultFS, pr.BIf); err != nil {
			return err
		}
		p, err := Load()
		if err != nil {
			return err
		}
		defer p.Close()
		if err := p.Attach(idx, ModeGeneric); err != nil {
			return err
		}
		if err := p.AddFlow(Flow{netip.MustParseAddr("239.1.1.1"), 7000}); err != nil {
			return err
		}
		return p.Pin(dir)
	})
	t.Cleanup(func() { RemovePins(dir) })
	if err != nil {
		t.Fatal(err)
	}
	return pr, dir, idx
}

// open runs OpenPinned in B's namespace.
func openPinned(t *testing.T, pr *netns.Pair) (*Program, error) {
	var p *Program
	err := pr.B.Do(func() (err error) {
		p, err = OpenPinned(DefaultFS, pr.BIf)
		return err
	})
	return p, err
}

func TestPinOutlivesProgram(t *testing.T) {
	pr, dir, idx := pinEnv(t)
	if got := xdpOn(t, pr.B, pr.BIf); got != "xdpgeneric" {
		t.Fatalf("after Close of the pinning Program: xdp %q, want xdpgeneric", got)
	}
	ns, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ns {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if want := []string{"counters", "fault", "fault_seq", "flows", "link", "xsk_owners", "xsks"}; !slices.Equal(names, want) {
		t.Errorf("pins %v, want %v", names, want)
	}

	// A guest adds its flow, leaves the static one alone, registers a
	// socket; Close undoes exactly that and leaves the program attached.
	g, err := openPinned(t, pr)
	if err != nil {
		t.Fatal(err)
	}
	if g.Ifindex() != idx || g.Mode() != ModeGeneric || g.PinPath() != dir {
		t.Errorf("guest: ifindex %d mode %v path %q", g.Ifindex(), g.Mode(), g.PinPath())
	}
	static := Flow{netip.MustParseAddr("239.1.1.1"), 7000}
	own := Flow{netip.MustParseAddr("10.1.1.1"), 7001}
	for _, f := range []Flow{static, own} {
		if err := g.AddFlow(f); err != nil {
			t.Fatal(err)
		}
	}
	fe, err := g.FlowEntries()
	if err != nil {
		t.Fatal(err)
	}
	want := []FlowEntry{{own, os.Getpid()}, {static, 0}}
	if !slices.Equal(fe, want) {
		t.Errorf("flows %v, want %v", fe, want)
	}
	isErr(t, g.RemoveFlow(static), ErrNotFound)
	var x *testXSK
	if err := pr.B.Do(func() (err error) { x, err = newTestXSK(idx, 0); return err }); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := g.SetSocket(0, x.FD()); err != nil {
		t.Fatal(err)
	}
	so, err := g.SocketOwners()
	if err != nil || len(so) != 1 || so[0].Queue != 0 || so[0].PID != os.Getpid() || so[0].Ino == 0 {
		t.Errorf("socket owners %+v, %v", so, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	h, err := openPinned(t, pr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if fe, _ := h.FlowEntries(); !slices.Equal(fe, []FlowEntry{{static, 0}}) {
		t.Errorf("after the guest closed: flows %v", fe)
	}
	if so, _ := h.SocketOwners(); len(so) != 0 {
		t.Errorf("after the guest closed: sockets %v", so)
	}
	if got := xdpOn(t, pr.B, pr.BIf); got != "xdpgeneric" {
		t.Errorf("after the guest closed: xdp %q", got)
	}

	// Unpin and Detach detach at once although another Program holds the
	// link.
	g2, err := openPinned(t, pr)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if err := h.Unpin(); err != nil {
		t.Fatal(err)
	}
	if err := h.Detach(); err != nil {
		t.Fatal(err)
	}
	if got := xdpOn(t, pr.B, pr.BIf); got != "" {
		t.Errorf("after Detach: xdp %q", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("pins still there: %v", err)
	}
	_, err = openPinned(t, pr)
	isErr(t, err, ErrNotFound)
}

func TestPinErrors(t *testing.T) {
	pr, dir, _ := pinEnv(t)
	p := load(t)
	isErr(t, p.Pin(dir), ErrNotAttached)
	// Another namespace's veth0 has its own directory.
	var other string
	if err := pr.A.Do(func() (err error) { other, err = PinDir(DefaultFS, pr.AIf); return err }); err != nil {
		t.Fatal(err)
	}
	if other == dir {
		t.Errorf("A and B share pin dir %s", dir)
	}
	if err := pr.A.Do(func() error { _, err := OpenPinned(DefaultFS, pr.AIf); return err }); err == nil {
		t.Error("OpenPinned in A found B's pins")
	} else {
		isErr(t, err, ErrNotFound)
	}
	_, err := PinDir(DefaultFS, "../x")
	isErr(t, err, ErrInvalid)
	q := load(t)
	aidx := ifindex(t, pr.A, pr.AIf)
	if err := pr.A.Do(func() error { return q.Attach(aidx, ModeGeneric) }); err != nil {
		t.Fatal(err)
	}
	isErr(t, q.Pin("/tmp/not-bpffs"), ErrNoFS)
	isErr(t, q.Pin(dir), ErrBusy)

	// Pins of a deleted interface are stale.
	pr.B.Exec("ip", "link", "del", pr.BIf)
	if err := pr.B.Do(func() error { _, err := LoadPinned(dir); return err }); err == nil {
		t.Error("LoadPinned of a deleted interface's pins succeeded")
	} else {
		isErr(t, err, ErrStale)
	}
}
