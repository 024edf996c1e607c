package afpacket_test

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/afpacket"
	"github.com/ringfire/ringfire/internal/netns"
)

// Each receive ring laps many times, a few datagrams at a time, every one
// received once and in order: a frame ring of 8 frames (4 blocks of one
// page, 2048-byte frames), a block ring of 4 blocks of one page.
func TestReceiveLaps(t *testing.T) {
	for _, c := range []struct {
		name     string
		ring     afpacket.RXRing
		per      int    // datagrams a round
		released uint64 // Stats.RXBlocks at least
	}{
		{"frames", afpacket.FrameRing, 5, 0},   // 5 of 8 frames a round
		{"blocks", afpacket.BlockRing, 10, 16}, // 10 × 300 bytes: a block or so a round
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, afpacket.Config{RX: c.ring, BlockSize: 4096, Blocks: 4})
			dst := netip.AddrPortFrom(r.p.BAddr, port)
			const rounds = 150
			for i := range rounds {
				r.sendKernel(t, dst, i*c.per, c.per, 300)
				got := r.receive(t, c.per)
				want := make([]uint32, c.per)
				for j := range want {
					want[j] = uint32(i*c.per + j)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d: got %v, want %v", i, got, want)
				}
			}
			st, err := r.sock.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.RXFrames != uint64(rounds*c.per) || st.RXBlocks < c.released || st.Drops != 0 {
				t.Errorf("stats %+v: want %d frames, ≥ %d blocks released, no drops", st, rounds*c.per, c.released)
			}
		})
	}
}

// A frame ring hands each frame over as soon as the kernel has written
// it: one datagram wakes the poller and is received at once, however long
// the BlockTimeout (which only a block ring's blocks wait for).
func TestFrameHandedOverAlone(t *testing.T) {
	r := newRig(t, afpacket.Config{BlockTimeout: time.Hour})
	dst := netip.AddrPortFrom(r.p.BAddr, port)
	frames := make([][]byte, 4)
	for i := range 3 {
		r.sendKernel(t, dst, i, 1, 64)
		if ok, err := r.poll.WaitFor(wait, nil); !ok || err != nil {
			t.Fatalf("datagram %d: WaitFor %v, %v: the ring did not hand it over", i, ok, err)
		}
		if n := r.sock.Receive(frames); n != 1 || r.sock.Filling() {
			t.Fatalf("datagram %d: received %d frames (Filling %v), want 1 (false)", i, n, r.sock.Filling())
		}
		r.sock.Release()
	}
}

// The transmit ring of 8 frames laps: 1000 datagrams reach a kernel
// socket, intact and in order.
func TestSendLaps(t *testing.T) {
	r := newRig(t, afpacket.Config{TXFrames: 8})
	c := listen(t, r.p.A, netip.AddrPortFrom(r.p.AAddr, port))
	tmpl := r.template(t)
	const total = 1000
	lens := make([]int, 0, 8)
	payload := make([]byte, 200)
	buf := make([]byte, 2048)
	next := 0
	for sent := 0; sent < total; {
		k := r.sock.ReserveTX(min(5, total-sent))
		lens = lens[:0]
		for i := range k {
			binary.BigEndian.PutUint32(payload, uint32(sent+i))
			lens = append(lens, tmpl.Build(r.sock.TXFrame(i), payload, uint16(sent+i)))
		}
		if err := r.sock.SubmitTX(lens); err != nil {
			t.Fatal(err)
		}
		sent += k
		// Read what arrived, so the kernel socket's buffer never overflows.
		for ; next < sent; next++ {
			c.SetReadDeadline(time.Now().Add(wait))
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("datagram %d: %v", next, err)
			}
			if n != len(payload) || binary.BigEndian.Uint32(buf) != uint32(next) || from.Port() != port+1 {
				t.Fatalf("datagram %d: %d bytes from %v carrying %d", next, n, from, binary.BigEndian.Uint32(buf))
			}
		}
	}
	st, _ := r.sock.Stats()
	if st.TXFrames != total || st.Kicks < total/5 {
		t.Errorf("stats %+v: want %d frames, ≥ %d kicks", st, total, total/5)
	}
	if p := r.sock.TXPending(); p != 0 {
		t.Errorf("%d frames pending after everything arrived", p)
	}
}

// Only our flow reaches the ring: not another port, not another address
// on our port, not TCP.
func TestFilterPassesOnlyOurFlow(t *testing.T) {
	r := newRig(t, afpacket.Config{})
	group := netip.MustParseAddr("239.255.7.7")
	r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port+1), 100, 5, 64)
	r.sendKernel(t, netip.AddrPortFrom(group, port), 200, 5, 64)
	r.p.A.Do(func() error { // a TCP SYN to our port (refused)
		c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(r.p.BAddr, port).String(), time.Second)
		if err == nil {
			c.Close()
		}
		return nil
	})
	r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port), 7, 1, 64)
	if got := r.receive(t, 1); !slices.Equal(got, []uint32{7}) {
		t.Fatalf("got %v, want only [7]", got)
	}
	r.expectNone(t, 50*time.Millisecond)
	st, _ := r.sock.Stats()
	if st.Packets != 1 {
		t.Errorf("%d packets passed the filter, want 1", st.Packets)
	}
}

// A ring nobody empties fills: the kernel drops what does not fit and
// counts it; a block ring's queue freezes.
func TestStatsDropsAndFreezes(t *testing.T) {
	for _, c := range []struct {
		name   string
		ring   afpacket.RXRing
		freeze bool
	}{{"frames", afpacket.FrameRing, false}, {"blocks", afpacket.BlockRing, true}} {
		t.Run(c.name, func(t *testing.T) { testDrops(t, c.ring, c.freeze) })
	}
}

func testDrops(t *testing.T, ring afpacket.RXRing, freeze bool) {
	r := newRig(t, afpacket.Config{RX: ring, BlockSize: 4096, Blocks: 2})
	const n = 300
	r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port), 0, n, 500)
	// The stack delivers the datagrams on its own time: wait until the
	// kernel has counted all of them.
	st := r.statsUntil(t, func(st afpacket.Stats) bool { return st.Packets >= n })
	if st.Packets != n || st.Drops == 0 || st.Drops >= n || (st.Freezes != 0) != freeze {
		t.Fatalf("stats %+v: want %d packets, some (not all) dropped, a freeze: %v", st, n, freeze)
	}
	got := r.receive(t, n-int(st.Drops))
	if int(st.Drops)+len(got) != n {
		t.Errorf("received %d and dropped %d of %d", len(got), st.Drops, n)
	}
	for i, v := range got { // the first ones, in order
		if v != uint32(i) {
			t.Fatalf("frame %d carries %d", i, v)
		}
	}
	// Counters accumulate across reads (the kernel resets its own).
	st2, _ := r.sock.Stats()
	if st2.Packets != st.Packets || st2.Drops != st.Drops {
		t.Errorf("second read %+v, first %+v", st2, st)
	}
	r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port), 0, 1, 10)
	if got := r.receive(t, 1); len(got) != 1 {
		t.Fatalf("after the ring filled, got %v", got)
	}
}

// Close wakes a goroutine waiting for frames, with ErrClosed.
func TestCloseWakesWaiter(t *testing.T) {
	r := newRig(t, afpacket.Config{})
	done := make(chan error, 1)
	go func() {
		_, err := r.poll.WaitFor(-1, nil)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r.poll.Close()
	select {
	case err := <-done:
		if !errors.Is(err, afpacket.ErrClosed) {
			t.Fatalf("WaitFor: %v, want ErrClosed", err)
		}
	case <-time.After(wait):
		t.Fatal("Close did not wake the waiter")
	}
	r.poll = nil
}

// WaitFor returns when frames arrive, when woken, and when its time runs
// out.
func TestWait(t *testing.T) {
	r := newRig(t, afpacket.Config{})
	start := time.Now()
	if ok, err := r.poll.WaitFor(30*time.Millisecond, nil); ok || err != nil || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("WaitFor with nothing: %v, %v after %v", ok, err, time.Since(start))
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port), 0, 1, 10)
	}()
	if ok, err := r.poll.WaitFor(wait, nil); !ok || err != nil {
		t.Fatalf("WaitFor a frame: %v, %v", ok, err)
	}
	r.receive(t, 1)
	var flag atomicBool
	go func() {
		time.Sleep(20 * time.Millisecond)
		flag.set()
		r.poll.Wake()
	}()
	if ok, err := r.poll.WaitFor(wait, flag.get); !ok || err != nil {
		t.Fatalf("WaitFor a wake: %v, %v", ok, err)
	}
}

// Receive, Release, ReserveTX, TXFrame and SubmitTX do not allocate, on
// either receive ring.
func TestNoAllocs(t *testing.T) {
	for _, ring := range []afpacket.RXRing{afpacket.FrameRing, afpacket.BlockRing} {
		r := newRig(t, afpacket.Config{RX: ring, BlockTimeout: time.Millisecond})
		listen(t, r.p.A, netip.AddrPortFrom(r.p.AAddr, port))
		r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port), 0, 100, 64)
		if _, err := r.poll.WaitFor(wait, nil); err != nil {
			t.Fatal(err)
		}
		tmpl := r.template(t)
		frames := make([][]byte, 4)
		payload := make([]byte, 64)
		lens := make([]int, 1)
		received := 0
		if a := testing.AllocsPerRun(50, func() {
			received += r.sock.Receive(frames)
			r.sock.Release()
			if r.sock.ReserveTX(1) == 1 {
				lens[0] = tmpl.Build(r.sock.TXFrame(0), payload, 1)
				if err := r.sock.SubmitTX(lens); err != nil {
					t.Fatal(err)
				}
			}
		}); a != 0 || received == 0 {
			t.Errorf("ring %d: %v allocations per receive and send, %d frames received (want some)", ring, a, received)
		}
	}
}

// A frame ring's frames hold a frame of the interface's MTU: a datagram
// of 8000 bytes arrives whole over a link of MTU 9000.
func TestFrameRingHoldsMTU(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	for _, side := range []struct {
		ns     *netns.NS
		ifname string
	}{{p.A, p.AIf}, {p.B, p.BIf}} {
		if _, err := side.ns.Exec("ip", "link", "set", "dev", side.ifname, "mtu", "9000"); err != nil {
			t.Fatal(err)
		}
	}
	r := openRig(t, p, afpacket.Config{})
	r.sendKernel(t, netip.AddrPortFrom(r.p.BAddr, port), 42, 1, 8000)
	if got := r.receive(t, 1); !slices.Equal(got, []uint32{42}) {
		t.Fatalf("got %v, want [42]", got)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  afpacket.Config
		want string
	}{
		{afpacket.Config{BlockSize: 5000}, "block size"},
		{afpacket.Config{Blocks: 1}, "blocks"},
		{afpacket.Config{TXFrames: 100}, "TX frames"},
		{afpacket.Config{FrameSize: 1024}, "frame size"},
		{afpacket.Config{RXFrameSize: 3000}, "RX frame size"},
		{afpacket.Config{RX: 2}, "RX ring kind"},
	} {
		if _, err := afpacket.Open(1, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v): %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
}

// Filling tells frames in the block the kernel is still filling, which
// Receive cannot hand out until the block retires, from an empty ring, and
// a block the kernel opened after the last one read from one still
// holding an earlier header.
func TestFilling(t *testing.T) {
	// The block retires only when full: its timer is far beyond the test.
	r := newRig(t, afpacket.Config{RX: afpacket.BlockRing, BlockSize: 4096, Blocks: 4, BlockTimeout: time.Hour})
	dst := netip.AddrPortFrom(r.p.BAddr, port)
	if r.sock.Filling() || r.sock.Readable() {
		t.Fatalf("empty ring: Filling %v, Readable %v", r.sock.Filling(), r.sock.Readable())
	}
	r.sendKernel(t, dst, 0, 3, 100)
	r.fillingUntil(t)
	if r.sock.Readable() {
		t.Fatal("three frames in an open block: Readable, want not before the block retires")
	}
	// Enough frames to fill the first block: it retires and the next one,
	// which the kernel opened after it, fills.
	r.sendKernel(t, dst, 3, 30, 100)
	got := len(r.receive(t, 1))
	frames := make([][]byte, 64)
	for k := r.sock.Receive(frames); k > 0; k = r.sock.Receive(frames) {
		got += k
	}
	r.sock.Release()
	if got == 0 || got >= 33 {
		t.Fatalf("received %d frames of 33 from full blocks, want some but not all", got)
	}
	r.fillingUntil(t)
}

// fillingUntil waits, within wait, for Filling to report frames.
func (r *rig) fillingUntil(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(wait); !r.sock.Filling(); {
		if time.Now().After(deadline) {
			t.Fatalf("Filling still false after %v", wait)
		}
		runtime.Gosched()
	}
}
