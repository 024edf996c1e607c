package transport_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
	"github.com/ringfire/ringfire/xdp"
)

// An AF_XDP transport's sockets are in Go's poller (through the
// transport's own epoll instance) only while a RecvBatch waits: a mirror
// that polls them itself, in its wait modes, costs nobody a wake-up per
// frame, and no send's freed buffer wakes anybody either.
func TestSocketsPolledOnlyWhileWaiting(t *testing.T) {
	xp := newXDPPair(t)
	a, b := xp.a, xp.b
	polledAny := func(fds []int) bool {
		p := testenv.Polled(t)
		for _, fd := range fds {
			if p[fd] {
				return true
			}
		}
		return false
	}
	if polledAny(a.PollFDs()) || polledAny(b.PollFDs()) {
		t.Fatalf("idle transports' sockets %v, %v are watched by an epoll instance", a.PollFDs(), b.PollFDs())
	}
	sendAll(t, a, []replica.Message{{Buf: []byte("not waited for"), Addr: b.LocalAddr()}})
	if got := recvN(t, b, 1, 2048); string(got[0].data) != "not waited for" {
		t.Fatalf("received %q", got[0].data)
	}

	got := make(chan error, 1)
	go func() {
		ms := newMsgs(1, 2048)
		n, err := b.RecvBatch(ms, 10*time.Second)
		if err == nil && n != 1 {
			err = replica.ErrClosed
		}
		got <- err
	}()
	testenv.Until(t, 10*time.Second, "a waiting RecvBatch's sockets in an epoll instance", func() bool { return polledAny(b.PollFDs()) })
	sendAll(t, a, []replica.Message{{Buf: []byte("waited for"), Addr: b.LocalAddr()}})
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("RecvBatch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RecvBatch did not return within 10 s of the datagram")
	}
	if polledAny(b.PollFDs()) {
		t.Fatalf("after the wait, sockets %v are still watched", b.PollFDs())
	}
}

// Arrived says whether datagrams are there, a busy poll that is due not
// counted: with busy polling on, an idle transport is Pending (a busy poll
// is due) but has not Arrived; a datagram sent to it Arrives without any
// receive call (the kernel delivers it to the RX ring), and a receive
// takes it.
func TestArrivedIgnoresBusyPoll(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	a := openXDP(t, p.A, transport.XDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 0)})
	b := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0),
		Socket: xdp.Config{BusyPoll: 20 * time.Microsecond}})
	if !b.Pending(time.Now()) || b.Arrived() {
		t.Fatalf("idle, busy polling: Pending %v, Arrived %v; want true, false", b.Pending(time.Now()), b.Arrived())
	}
	sendAll(t, a, []replica.Message{{Buf: []byte("arrives"), Addr: b.LocalAddr()}})
	testenv.Until(t, 10*time.Second, "the datagram in B's RX ring", b.Arrived)
	if got := recvN(t, b, 1, 2048); string(got[0].data) != "arrives" {
		t.Fatalf("received %q", got[0].data)
	}
	if b.Arrived() {
		t.Fatal("Arrived after the only datagram was received")
	}
}

// Busy polling chosen for a wait mode (BusyPollAuto) stays off on a veth,
// where the sender's system call fills the RX ring: empty receives make
// no busy-poll system call. Asked for (BusyPollAuto false), a veth's
// sockets busy-poll all the same.
func TestBusyPollAutoOffOnVeth(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	busy := xdp.Config{BusyPoll: 20 * time.Microsecond}
	for _, c := range []struct {
		ns   *netns.NS
		addr netip.Addr
		auto bool
		want time.Duration
	}{{p.A, p.AAddr, true, 0}, {p.B, p.BAddr, false, 20 * time.Microsecond}} {
		x := openXDP(t, c.ns, transport.XDPConfig{Bind: netip.AddrPortFrom(c.addr, 0), Socket: busy, BusyPollAuto: c.auto})
		ms := newMsgs(1, 2048)
		for range 3 {
			if n, err := x.RecvBatch(ms, 0); n != 0 || err != nil {
				t.Fatalf("an idle receive: %d, %v", n, err)
			}
		}
		st, err := x.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.BusyPoll != c.want || (st.Socket.BusyPolls > 0) != (c.want > 0) {
			t.Errorf("BusyPollAuto %v on a veth: busy poll %v, %d busy-poll calls; want %v", c.auto, st.BusyPoll, st.Socket.BusyPolls, c.want)
		}
	}
}
