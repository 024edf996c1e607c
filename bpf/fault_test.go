package bpf

import (
	"net/netip"
	"slices"
	"testing"
)

// TestFault checks the fault map on steered packets that reach the kernel
// (no socket) and on packets redirected to an AF_XDP socket.
func TestFault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ModeNative)
	flow := netip.AddrPortFrom(e.BAddr, 7700)
	if err := e.prog.AddFlow(Flow{flow.Addr(), flow.Port()}); err != nil {
		t.Fatal(err)
	}
	kern := receive(t, listen(t, e.B, flow))
	ping(t, e.A, e.BAddr, 1)
	setFault := func(f Fault) {
		t.Helper()
		if err := e.prog.SetFault(f); err != nil {
			t.Fatal(err)
		}
	}
	received := 0
	run := func(n int, tag string) (Counters, int) {
		t.Helper()
		before := settled(t, e.prog)
		send(t, e.A, e.AIf, e.prog, flow, n, tag)
		d := settled(t, e.prog).sub(before)
		got := kern.waitCount(received+int(d.NoSocket)) - received
		received += got
		return d, got
	}

	// Every 4th of 400 steered packets: exactly 100 dropped.
	setFault(Fault{DropEvery: 4})
	d, got := run(400, "every4")
	if d.Dropped != 100 || d.NoSocket != 300 || got != 300 {
		t.Errorf("DropEvery 4 over 400: delta %+v, kernel got %d; want 100 dropped, 300 passed", d, got)
	}

	// Off again: nothing dropped.
	setFault(Fault{})
	d, got = run(100, "off")
	if d.Dropped != 0 || d.NoSocket != 100 || got != 100 {
		t.Errorf("fault off: delta %+v, kernel got %d; want 0 dropped", d, got)
	}

	// A random half of 1000.
	setFault(Fault{DropRatio: 0.5})
	d, got = run(1000, "half")
	if d.Dropped < 300 || d.Dropped > 700 || d.Dropped+d.NoSocket != 1000 || got != int(d.NoSocket) {
		t.Errorf("DropRatio 0.5 over 1000: delta %+v, kernel got %d; want 300..700 dropped, the rest passed", d, got)
	}
	t.Logf("DropRatio 0.5 dropped %d of 1000", d.Dropped)

	// Ratio 1 drops everything.
	setFault(Fault{DropRatio: 1})
	d, got = run(50, "all")
	if d.Dropped != 50 || got != 0 {
		t.Errorf("DropRatio 1: delta %+v, kernel got %d; want all 50 dropped", d, got)
	}

	// Every 2nd with a socket: the even-numbered half is redirected, in
	// order of the restarted sequence.
	setFault(Fault{DropEvery: 2})
	xsks := openXSKs(t, e)
	before := settled(t, e.prog)
	send(t, e.A, e.AIf, e.prog, flow, 40, "xsk")
	frames := xsks.recv(t, 20)
	d = settled(t, e.prog).sub(before)
	var even []int
	for i := 0; i < 40; i += 2 {
		even = append(even, i)
	}
	if p := payloads(frames); d.Dropped != 20 || d.Redirected != 20 || !slices.Equal(p, want("xsk", even...)) {
		t.Errorf("DropEvery 2 with a socket: delta %+v, XSK got %q", d, p)
	}

	setFault(Fault{})
	if f, err := e.prog.Fault(); err != nil || f != (Fault{}) {
		t.Errorf("Fault() = %+v, %v after turning it off", f, err)
	}
	if n := kern.count(); n != received {
		t.Errorf("kernel socket got %d datagrams, counted %d", n, received)
	}
}
