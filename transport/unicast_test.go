package transport_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// xdpPair is two AF_XDP transports, one in each namespace of a pair.
type xdpPair struct {
	p    *netns.Pair
	a, b *transport.XDP
}

func newXDPPair(t *testing.T) *xdpPair {
	t.Helper()
	netns.Require(t)
	p := netns.NewPair(t)
	return &xdpPair{
		p: p,
		a: openXDP(t, p.A, transport.XDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 0)}),
		b: openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)}),
	}
}

// Ten thousand datagrams of every size from 1 to 1472 bytes go from A to
// B over AF_XDP, each arriving exactly once, intact, from A's address; B
// echoes each to the address it came from, and A gets every echo. The
// transports' counters and the programs' counters agree.
func TestUnicastBothWays(t *testing.T) {
	xp := newXDPPair(t)
	a, b := xp.a, xp.b
	if a.LocalAddr().Addr() != xp.p.AAddr || a.LocalAddr().Port() == 0 {
		t.Fatalf("A's LocalAddr %v, want %v and a port", a.LocalAddr(), xp.p.AAddr)
	}
	if b.LocalAddr().Addr() != xp.p.BAddr || b.LocalAddr().Port() == 0 {
		t.Fatalf("B's LocalAddr %v, want %v and a port", b.LocalAddr(), xp.p.BAddr)
	}
	sa, sb := stats(t, a), stats(t, b)
	t.Logf("A: attach %s, zero-copy %v (%s), %d sockets", sa.Attach, sa.ZeroCopy, sa.CopyWhy, sa.Sockets)
	if sa.Sockets != 1 || sb.Sockets != 1 {
		t.Fatalf("sockets: A %d, B %d, want 1 each on a one-queue veth", sa.Sockets, sb.Sockets)
	}

	const total = 10000
	const window = 32 // one SendBatch of at most this many; see TestSendBatchLarge
	out := make([]replica.Message, window)
	in := newMsgs(window, 2048)
	echo := make([]replica.Message, window)
	start := time.Now()
	for base := 0; base < total; base += window {
		w := min(window, total-base)
		want := map[string]int{} // the window's payloads (tiny ones may repeat)
		for i := range w {
			pl := payload(base+i, size(base+i))
			out[i] = replica.Message{Buf: pl, Addr: b.LocalAddr()}
			want[string(pl)]++
		}
		sendAll(t, a, out[:w])

		got := recvInto(t, b, in, w)
		if got != w {
			st := stats(t, b)
			t.Fatalf("datagrams %d..%d: B received %d of %d within %v; B stats %+v", base, base+w-1, got, w, wait, st)
		}
		for i, m := range in[:got] {
			if m.Addr != a.LocalAddr() {
				t.Fatalf("datagram from %v, want %v", m.Addr, a.LocalAddr())
			}
			k := string(m.Buf[:m.N])
			if want[k] == 0 {
				t.Fatalf("datagrams %d..%d: unexpected or duplicated %d-byte datagram %x...", base, base+w-1, m.N, clip(m.Buf[:m.N]))
			}
			want[k]--
			// Echo: its own buffer, to the address it came from.
			echo[i] = replica.Message{Buf: bytes.Clone(m.Buf[:m.N]), Addr: m.Addr}
		}
		sendAll(t, b, echo[:got])

		got = recvInto(t, a, in, w)
		if got != w {
			t.Fatalf("echoes of %d..%d: A received %d of %d", base, base+w-1, got, w)
		}
		for i, m := range in[:got] {
			if m.Addr != b.LocalAddr() {
				t.Fatalf("echo from %v, want %v", m.Addr, b.LocalAddr())
			}
			if !bytes.Equal(m.Buf[:m.N], echo[i].Buf) {
				t.Fatalf("echo %d of window %d: %d bytes %x..., want %d bytes %x...", i, base, m.N, clip(m.Buf[:m.N]), len(echo[i].Buf), clip(echo[i].Buf))
			}
		}
	}
	t.Logf("%d datagrams each way in %v", total, time.Since(start))

	// Counters settle: the program counts before the socket sees a frame.
	sa, sb = stats(t, a), stats(t, b)
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"A Sent", sa.Sent, total}, {"A Received", sa.Received, total},
		{"B Sent", sb.Sent, total}, {"B Received", sb.Received, total},
		{"A Socket.TXFrames", sa.Socket.TXFrames, total}, {"B Socket.TXFrames", sb.Socket.TXFrames, total},
		{"A Socket.RXFrames", sa.Socket.RXFrames, total}, {"B Socket.RXFrames", sb.Socket.RXFrames, total},
		{"A Program.Redirected", sa.Program.Redirected, total}, {"B Program.Redirected", sb.Program.Redirected, total},
		{"A Program.Dropped", sa.Program.Dropped, 0}, {"B Program.Dropped", sb.Program.Dropped, 0},
		{"A Program.NoSocket", sa.Program.NoSocket, 0}, {"B Program.NoSocket", sb.Program.NoSocket, 0},
		{"A NoRoute+TooBig", sa.NoRoute + sa.TooBig, 0}, {"B NoRoute+TooBig", sb.NoRoute + sb.TooBig, 0},
		{"A Malformed+Foreign+Truncated", sa.Malformed + sa.Foreign + sa.Truncated, 0},
		{"B Malformed+Foreign+Truncated", sb.Malformed + sb.Foreign + sb.Truncated, 0},
		{"A Socket.RXDropped", sa.Socket.RXDropped, 0}, {"B Socket.RXDropped", sb.Socket.RXDropped, 0},
		{"A Socket.TXInvalid", sa.Socket.TXInvalid, 0}, {"B Socket.TXInvalid", sb.Socket.TXInvalid, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if t.Failed() {
		t.Logf("A %+v", sa)
		t.Logf("B %+v", sb)
	}
}

// recvInto receives exactly n datagrams into ms[:n] (in batches), within
// wait, and returns how many arrived.
func recvInto(t testing.TB, x *transport.XDP, ms []replica.Message, n int) int {
	t.Helper()
	got := 0
	deadline := time.Now().Add(wait)
	for got < n && time.Now().Before(deadline) {
		k, err := x.RecvBatch(ms[got:n], 100*time.Millisecond)
		if err != nil {
			t.Fatalf("RecvBatch: %v", err)
		}
		got += k
	}
	return got
}

// One SendBatch of more datagrams than the kernel transmits per sendto in
// copy mode (32) sends them all, without another SendBatch to push the
// rest out.
func TestSendBatchLarge(t *testing.T) {
	xp := newXDPPair(t)
	for _, n := range []int{33, 64, 256} {
		ms := make([]replica.Message, n)
		for i := range ms {
			ms[i] = replica.Message{Buf: payload(i, 100), Addr: xp.b.LocalAddr()}
		}
		before := stats(t, xp.b).Received
		sendAll(t, xp.a, ms)
		got := recvWithin(t, xp.b, n, 2048, 3*time.Second)
		if len(got) != n {
			// Diagnose: one more SendBatch (one more sendto) pushes the
			// stragglers out, so they were delayed, not lost.
			sendAll(t, xp.a, []replica.Message{{Buf: []byte("push"), Addr: xp.b.LocalAddr()}})
			more := recvWithin(t, xp.b, n-len(got)+1, 2048, 3*time.Second)
			t.Logf("after one more SendBatch of 1 datagram: %d more arrived (%d stragglers + the new one expected)", len(more), n-len(got))
			sa, sb := stats(t, xp.a), stats(t, xp.b)
			t.Fatalf("one SendBatch of %d datagrams: only %d arrived within 3 s (the rest wait in the TX ring "+
				"for the next sendto: copy mode transmits at most 32 frames per sendto and returns EAGAIN, "+
				"which xdp.Socket.Kick takes for done); A socket %+v; B program %+v (B received %d before)",
				n, len(got), sa.Socket, sb.Program, before)
		}
		for i, d := range got {
			if !bytes.Equal(d.data, ms[i].Buf) {
				t.Fatalf("batch of %d: datagram %d differs", n, i)
			}
		}
	}
}
