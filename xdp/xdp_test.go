package xdp_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/internal/xdptest"
	"github.com/ringfire/ringfire/xdp"
)

const port = 7500

// rig is a veth pair with the steering program on B's end, steering
// B:port to an AF_XDP socket on queue 0.
type rig struct {
	p     *netns.Pair
	prog  *bpf.Program
	sock  *xdp.Socket
	index int // B's ifindex
}

func newRig(t *testing.T, cfg xdp.Config) *rig {
	t.Helper()
	netns.Require(t)
	r := &rig{p: netns.NewPair(t)}
	r.prog, r.index = xdptest.Attach(t, r.p.B, r.p.BIf, bpf.ModeNative, bpf.Flow{Addr: r.p.BAddr, Port: port})
	err := r.p.B.Do(func() (err error) {
		if r.sock, err = xdp.Open(r.index, 0, cfg); err != nil {
			return err
		}
		return r.prog.SetSocket(0, r.sock.FD())
	})
	if r.sock != nil {
		t.Cleanup(func() { r.sock.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sendKernel sends n datagrams from A to B:port with kernel UDP; datagram
// i carries i as 8 bytes followed by size-8 bytes of i's low byte.
func (r *rig) sendKernel(t testing.TB, n, size int) {
	t.Helper()
	err := r.p.A.Do(func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(r.p.BAddr, port)))
		if err != nil {
			return err
		}
		defer c.Close()
		for i := range n {
			if _, err := c.Write(payload(i, size)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func payload(i, size int) []byte {
	b := bytes.Repeat([]byte{byte(i)}, size)
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// receive takes n frames from the socket within 5 s and returns their UDP
// payloads (copied).
func (r *rig) receive(t *testing.T, n int) [][]byte {
	t.Helper()
	var out [][]byte
	frames := make([][]byte, 64)
	poller, err := xdp.NewPoller(r.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		if _, err := poller.Wait(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		k := r.sock.Receive(frames)
		for _, f := range frames[:k] {
			var p pkt.Packet
			if err := pkt.Parse(f, &p); err != nil {
				t.Fatalf("received frame: %v", err)
			}
			out = append(out, bytes.Clone(p.Payload))
		}
		r.sock.Release()
	}
	if len(out) != n {
		t.Fatalf("received %d of %d frames", len(out), n)
	}
	return out
}

// Frames a kernel socket sends reach the AF_XDP socket, in order, over
// several laps of the rings.
func TestReceiveLaps(t *testing.T) {
	r := newRig(t, xdp.Config{RingSize: 64})
	const n, burst = 1000, 50 // 15 laps of 64-entry rings, bursts that fit
	got := 0
	for range n / burst {
		r.sendKernel(t, burst, 100)
		for j, b := range r.receive(t, burst) {
			if !bytes.Equal(b, payload(j, 100)) {
				t.Fatalf("datagram %d: payload differs", got)
			}
			got++
		}
	}
	st, err := r.sock.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.RXFrames != n || st.RXDropped != 0 {
		t.Fatalf("stats %+v, want %d frames received and none dropped", st, n)
	}
	if zc, why := r.sock.ZeroCopy(); zc || why == nil {
		t.Fatalf("zero-copy %v (%v): veth has only copy mode, and the reason must be kept", zc, why)
	}
}

// A receiver that is away holds RXRingSize datagrams (by default four
// times RingSize) before the kernel drops, and counts what it dropped for
// want of a frame: every one of the rest.
func TestReceiveDepth(t *testing.T) {
	for _, c := range []struct {
		cfg   xdp.Config
		depth int
	}{
		{xdp.Config{RingSize: 64}, 256},
		{xdp.Config{RingSize: 64, RXRingSize: 32}, 32},
	} {
		t.Run(fmt.Sprint(c.depth), func(t *testing.T) {
			r := newRig(t, c.cfg)
			const over = 40
			r.sendKernel(t, c.depth+over, 100)
			for j, b := range r.receive(t, c.depth) {
				if !bytes.Equal(b, payload(j, 100)) {
					t.Fatalf("datagram %d: payload differs", j)
				}
			}
			st, err := r.sock.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.RXFrames != uint64(c.depth) || st.RXDropped != over || st.FillRingEmpty != over || st.RXRingFull != 0 {
				t.Fatalf("stats %+v: want %d frames received and %d dropped for want of a fill-ring frame", st, c.depth, over)
			}
			if got, want := c.cfg.UMEMBytes(), (c.depth+64)*2048; got != want {
				t.Fatalf("UMEMBytes %d, want %d", got, want)
			}
		})
	}
}

// Frames built into the TX ring reach a kernel UDP socket, over several
// laps of the TX and completion rings.
func TestTransmitLaps(t *testing.T) {
	r := newRig(t, xdp.Config{RingSize: 64})
	var conn *net.UDPConn
	err := r.p.A.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(r.p.AAddr, port+1)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var aMAC, bMAC pkt.MAC
	aMAC, bMAC = xdptest.MAC(t, r.p.A, r.p.AIf), xdptest.MAC(t, r.p.B, r.p.BIf)
	h := pkt.Header{Dst: aMAC, Src: bMAC, SrcAddr: netip.AddrPortFrom(r.p.BAddr, port),
		DstAddr: netip.AddrPortFrom(r.p.AAddr, port+1)}
	const n = 1000
	lens := make([]int, 0, 32)
	buf := make([]byte, 2048)
	for sent := 0; sent < n; {
		k := r.sock.ReserveTX(min(32, n-sent))
		lens = lens[:0]
		for i := range k {
			l, err := h.Build(r.sock.TXFrame(i), payload(sent+i, 64), uint16(sent+i))
			if err != nil {
				t.Fatal(err)
			}
			lens = append(lens, l)
		}
		if err := r.sock.SubmitTX(lens); err != nil {
			t.Fatal(err)
		}
		sent += k
		for j := sent - k; j < sent; j++ { // read as we go: the socket buffer is finite
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			m, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("datagram %d: %v", j, err)
			}
			if !bytes.Equal(buf[:m], payload(j, 64)) {
				t.Fatalf("datagram %d: payload differs", j)
			}
		}
	}
	st, _ := r.sock.Stats()
	if st.TXFrames != n || st.TXInvalid != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Wait times out when nothing comes, wakes when a frame comes, and
// returns ErrClosed once the poller is closed.
func TestPollerWait(t *testing.T) {
	r := newRig(t, xdp.Config{RingSize: 64})
	p, err := xdp.NewPoller(r.sock)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if ok, err := p.Wait(50 * time.Millisecond); ok || err != nil {
		t.Fatalf("Wait on an idle socket = %v, %v", ok, err)
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its timeout", time.Since(start))
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.sendKernel(t, 1, 32)
	}()
	if ok, err := p.Wait(5 * time.Second); !ok || err != nil {
		t.Fatalf("Wait for a frame = %v, %v", ok, err)
	}
	done := make(chan error, 1)
	r.sock.Receive(make([][]byte, 4))
	r.sock.Release()
	go func() { _, err := p.Wait(-1); done <- err }()
	time.Sleep(20 * time.Millisecond)
	p.Close()
	select {
	case err := <-done:
		if !errors.Is(err, xdp.ErrClosed) {
			t.Fatalf("Wait after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Wait")
	}
}

// A second socket on a held queue fails with ErrBusy after retrying; a
// zero-copy-only socket fails with ErrNotSupported on veth; a bad
// configuration is refused.
func TestOpenErrors(t *testing.T) {
	r := newRig(t, xdp.Config{RingSize: 64})
	err := r.p.B.Do(func() error {
		start := time.Now()
		_, err := xdp.Open(r.index, 0, xdp.Config{RingSize: 64, Bind: xdp.BindCopy, BindRetry: 100 * time.Millisecond})
		if !errors.Is(err, xdp.ErrBusy) {
			return fmt.Errorf("second socket on queue 0: %v, want ErrBusy", err)
		}
		if time.Since(start) < 100*time.Millisecond {
			return fmt.Errorf("ErrBusy after %v, before retrying", time.Since(start))
		}
		if _, err := xdp.Open(r.index, 1, xdp.Config{Bind: xdp.BindZeroCopy}); err == nil {
			return errors.New("queue 1 of a one-queue veth opened")
		}
		for _, c := range []xdp.Config{{RingSize: 100}, {FrameSize: 1000}, {RingSize: 4}, {RXRingSize: 100}, {RXRingSize: 1 << 17}} {
			if _, err := xdp.Open(r.index, 0, c); err == nil {
				return fmt.Errorf("config %+v accepted", c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	netns.Require(t)
	p := netns.NewPair(t)
	err = p.A.Do(func() error {
		ifi, err := net.InterfaceByName(p.AIf)
		if err != nil {
			return err
		}
		_, err = xdp.Open(ifi.Index, 0, xdp.Config{Bind: xdp.BindZeroCopy})
		if !errors.Is(err, xdp.ErrNotSupported) {
			return fmt.Errorf("zero-copy on veth: %v, want ErrNotSupported", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The receive and send paths do not allocate.
func TestNoAllocs(t *testing.T) {
	r := newRig(t, xdp.Config{RingSize: 64})
	frames := make([][]byte, 16)
	if a := testing.AllocsPerRun(100, func() {
		r.sock.Receive(frames)
		r.sock.Release()
	}); a != 0 {
		t.Fatalf("Receive+Release: %v allocs", a)
	}
	lens := []int{60}
	if a := testing.AllocsPerRun(100, func() {
		if r.sock.ReserveTX(1) == 1 {
			r.sock.SubmitTX(lens[:0]) // give it back unsent
		}
	}); a != 0 {
		t.Fatalf("ReserveTX+SubmitTX: %v allocs", a)
	}
}

// With BusyPoll, a Receive that finds the RX ring empty busy-polls the
// queue with recvfrom (counted), and frames still arrive.
func TestBusyPollReceive(t *testing.T) {
	r := newRig(t, xdp.Config{RingSize: 64, BusyPoll: 20 * time.Microsecond})
	frames := make([][]byte, 8)
	if n := r.sock.Receive(frames); n != 0 {
		t.Fatalf("Receive on an idle socket: %d frames", n)
	}
	st, err := r.sock.Stats()
	if err != nil || st.BusyPolls != 1 {
		t.Fatalf("stats %+v (%v): want one busy poll", st, err)
	}
	r.sendKernel(t, 4, 64)
	if got := r.receive(t, 4); len(got) != 4 {
		t.Fatalf("received %d frames, want 4", len(got))
	}
}

// With BusyPollGap, empty Receives closer together than the gap make one
// busy-poll syscall between them (a gap of an hour: exactly one in 100);
// with a short gap, Receives after it make another.
func TestBusyPollGap(t *testing.T) {
	frames := make([][]byte, 8)
	long := newRig(t, xdp.Config{RingSize: 64, BusyPoll: 20 * time.Microsecond, BusyPollGap: time.Hour})
	for range 100 {
		long.sock.Receive(frames)
	}
	if st, err := long.sock.Stats(); err != nil || st.BusyPolls != 1 {
		t.Fatalf("100 empty Receives within the gap: stats %+v (%v), want one busy poll", st, err)
	}
	short := newRig(t, xdp.Config{RingSize: 64, BusyPoll: 20 * time.Microsecond, BusyPollGap: time.Millisecond})
	testenv.Until(t, 10*time.Second, "a second busy poll after the gap", func() bool {
		short.sock.Receive(frames)
		st, _ := short.sock.Stats()
		return st.BusyPolls >= 2
	})
}
