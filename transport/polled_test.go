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
	polledAny := func(fds []int) bool { return polled(t, fds) }
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

// polled reports whether any of fds is in an epoll instance of this
// process.
func polled(t *testing.T, fds []int) bool {
	p := testenv.Polled(t)
	for _, fd := range fds {
		if p[fd] {
			return true
		}
	}
	return false
}

// While another transport of the interface watches the shared sockets
// itself (OnArrival set: a mirror's loop polls them), a RecvBatch that
// waits (a hub server's PUNCH receiver) leaves them out of every epoll
// instance, so the watcher's datagrams wake no thread of the process; the
// watcher's receive hands it its own datagrams, which end its wait. Once
// the watcher closes, the waiting RecvBatch arms the sockets and receives
// by itself.
func TestWaitLeavesWatchedSockets(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	watcher := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)})
	other := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 0)})
	watcher.OnArrival(func() {})
	checks := make(chan struct{}, 1)
	transport.HookWoken(other, func() {
		select {
		case checks <- struct{}{}:
		default:
		}
	})
	got := make(chan string, 1)
	recvOne := func() { // RecvBatch until a datagram comes (a wait may end with none)
		select {
		case <-checks: // the last wait's
		default:
		}
		go func() {
			ms := newMsgs(1, 2048)
			for end := time.Now().Add(wait); time.Now().Before(end); {
				switch n, err := other.RecvBatch(ms, wait); {
				case err != nil:
					got <- err.Error()
					return
				case n > 0:
					got <- string(ms[0].Buf[:ms[0].N])
					return
				}
			}
			got <- "nothing"
		}()
		select {
		case <-checks:
		case <-time.After(wait):
			t.Fatal("RecvBatch never began its wait")
		}
	}
	result := func(want string) {
		t.Helper()
		if d := <-got; d != want {
			t.Fatalf("RecvBatch returned %q, want %q", d, want)
		}
	}

	recvOne()
	if polled(t, other.PollFDs()) {
		t.Fatalf("beside a watcher, a waiting RecvBatch put the shared sockets %v in an epoll instance", other.PollFDs())
	}
	sendKernel(t, p.A, netip.AddrPortFrom(p.AAddr, 0), other.LocalAddr(), p.AIf, []byte("handed over"))
	testenv.Until(t, wait, "the datagram in the shared RX ring", watcher.Arrived)
	if n, err := watcher.RecvBatch(newMsgs(4, 2048), 0); n != 0 || err != nil {
		t.Fatalf("the watcher's receive = %d, %v; want 0, nil (the datagram is the other's)", n, err)
	}
	result("handed over")

	recvOne()
	if err := watcher.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, wait, "the waiting RecvBatch to arm the sockets once the watcher closed", func() bool {
		return polled(t, other.PollFDs())
	})
	sendKernel(t, p.A, netip.AddrPortFrom(p.AAddr, 0), other.LocalAddr(), p.AIf, []byte("by itself"))
	result("by itself")
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
