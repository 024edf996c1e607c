package replica_test

// The kernel UDP transport: batched sends to several destinations, receive
// waits, Close, and allocation-free batches.

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
)

// udNew opens a kernel UDP transport bound to addr:0 inside ns.
func udNew(t *testing.T, ns *netns.NS, addr netip.Addr) *replica.UDP {
	t.Helper()
	u := newUDPIn(t, ns, replica.UDPConfig{Bind: netip.AddrPortFrom(addr, 0), SocketBuffer: 1 << 20})
	t.Cleanup(func() { u.Close() })
	return u
}

func udMsgs(n, size int) []replica.Message {
	ms := make([]replica.Message, n)
	for i := range ms {
		ms[i].Buf = make([]byte, size)
	}
	return ms
}

// udRecv receives into ms until want datagrams arrived or 5 s passed.
func udRecv(t *testing.T, u *replica.UDP, want int, got func(replica.Message)) {
	t.Helper()
	ms := udMsgs(16, 2048)
	n := 0
	for deadline := time.Now().Add(5 * time.Second); n < want; {
		k, err := u.RecvBatch(ms, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for i := range k {
			got(ms[i])
		}
		n += k
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d datagrams", n, want)
		}
	}
}

func TestUDPSendBatchTwoDestinations(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	tx := udNew(t, p.A, p.AAddr)
	rx := []*replica.UDP{udNew(t, p.B, p.BAddr), udNew(t, p.B, p.BAddr)}
	ms := make([]replica.Message, 100)
	for i := range ms {
		ms[i] = replica.Message{Buf: []byte{byte(i), byte(i % 2), 0xA5}, Addr: rx[i%2].LocalAddr()}
	}
	if n, err := tx.SendBatch(ms); n != 100 || err != nil {
		t.Fatalf("SendBatch: %d, %v", n, err)
	}
	for d, u := range rx {
		seen := map[byte]bool{}
		udRecv(t, u, 50, func(m replica.Message) {
			b := m.Buf[:m.N]
			if m.N != 3 || int(b[1]) != d || b[2] != 0xA5 || int(b[0])%2 != d || seen[b[0]] {
				t.Fatalf("destination %d got % x", d, b)
			}
			if m.Addr != tx.LocalAddr() {
				t.Fatalf("datagram from %v, sender is %v", m.Addr, tx.LocalAddr())
			}
			seen[b[0]] = true
		})
		if len(seen) != 50 {
			t.Fatalf("destination %d got %d distinct datagrams", d, len(seen))
		}
	}
}

func TestUDPRecvBatchWait(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	tx := udNew(t, p.A, p.AAddr)
	rx := udNew(t, p.B, p.BAddr)
	ms := udMsgs(8, 2048)
	recv := func(wait time.Duration) (int, time.Duration, error) {
		type res struct {
			n   int
			err error
		}
		done := make(chan res, 1)
		start := time.Now()
		go func() { n, err := rx.RecvBatch(ms, wait); done <- res{n, err} }()
		select {
		case r := <-done:
			return r.n, time.Since(start), r.err
		case <-time.After(5 * time.Second):
			t.Fatalf("RecvBatch(%v) did not return", wait)
			return 0, 0, nil
		}
	}
	if n, d, err := recv(0); n != 0 || err != nil || d > time.Second {
		t.Fatalf("empty, wait 0: %d, %v after %v", n, err, d)
	}
	n, d, err := recv(50 * time.Millisecond)
	if n != 0 || err != nil {
		t.Fatalf("empty, wait 50ms: %d, %v", n, err)
	}
	t.Logf("wait 50ms returned after %v", d)
	// After a deadline expired, a poll still finds what is queued.
	if _, err := tx.SendBatch([]replica.Message{{Buf: []byte("one"), Addr: rx.LocalAddr()}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		n, _, err := recv(0)
		if err != nil || n > 1 {
			t.Fatalf("wait 0: %d, %v", n, err)
		}
		if n == 1 {
			if string(ms[0].Buf[:ms[0].N]) != "one" {
				t.Fatalf("got %q", ms[0].Buf[:ms[0].N])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the queued datagram never came out of a poll")
		}
	}
	// A negative wait blocks until a datagram comes.
	go func() {
		time.Sleep(50 * time.Millisecond)
		tx.SendBatch([]replica.Message{{Buf: []byte("two"), Addr: rx.LocalAddr()}})
	}()
	if n, _, err := recv(-1); n != 1 || err != nil || string(ms[0].Buf[:ms[0].N]) != "two" {
		t.Fatalf("wait -1: %d, %v", n, err)
	}
}

func TestUDPClosed(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	rx := udNew(t, p.B, p.BAddr)
	ms := udMsgs(4, 2048)
	blocked := make(chan error, 1)
	go func() { _, err := rx.RecvBatch(ms, -1); blocked <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-blocked:
		if !errors.Is(err, replica.ErrClosed) {
			t.Errorf("blocked RecvBatch: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a blocked RecvBatch did not return on Close")
	}
	for _, wait := range []time.Duration{0, 10 * time.Millisecond, -1} {
		if n, err := rx.RecvBatch(ms, wait); n != 0 || !errors.Is(err, replica.ErrClosed) {
			t.Errorf("RecvBatch(%v) after Close: %d, %v", wait, n, err)
		}
	}
	msg := []replica.Message{{Buf: []byte("x"), Addr: netip.AddrPortFrom(p.AAddr, 9)}}
	if n, err := rx.SendBatch(msg); n != 0 || !errors.Is(err, replica.ErrClosed) {
		t.Errorf("SendBatch after Close: %d, %v", n, err)
	}
}

func TestUDPBatchAllocs(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	tx := udNew(t, p.A, p.AAddr)
	rx := udNew(t, p.B, p.BAddr)
	const batch, runs = 8, 50
	out := make([]replica.Message, batch)
	for i := range out {
		out[i] = replica.Message{Buf: make([]byte, 64), Addr: rx.LocalAddr()}
	}
	if n := testing.AllocsPerRun(runs, func() {
		if k, err := tx.SendBatch(out); k != batch || err != nil {
			t.Fatalf("SendBatch: %d, %v", k, err)
		}
	}); n != 0 {
		t.Errorf("SendBatch of %d: %v allocations", batch, n)
	}
	// Each run sends a batch more and receives what is there: a receive
	// always has a datagram coming, however many the ones before took
	// (under load a batch arrives in parts) or the socket dropped.
	in := udMsgs(batch, 2048)
	if n := testing.AllocsPerRun(runs, func() {
		if k, err := tx.SendBatch(out); k != batch || err != nil {
			t.Fatalf("SendBatch: %d, %v", k, err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; {
			k, err := rx.RecvBatch(in, 0)
			if err != nil || (k == 0 && time.Now().After(deadline)) {
				t.Fatalf("RecvBatch: %d, %v", k, err)
			}
			if k > 0 {
				return
			}
		}
	}); n != 0 {
		t.Errorf("SendBatch and RecvBatch of %d: %v allocations", batch, n)
	}
}

// The kernel UDP socket is in no epoll instance, Go's poller's included:
// every datagram it receives and every send buffer the kernel frees
// would otherwise wake the poller's thread, while the mirror's loop or a
// ppoll waits for it (an os.File duplicate of the socket would be in it).
func TestUDPSocketInNoPoller(t *testing.T) {
	u, err := replica.NewUDP(replica.UDPConfig{Bind: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	fd := u.PollFDs()[0]
	if testenv.Polled(t)[fd] {
		t.Fatalf("the socket (descriptor %d) is watched by an epoll instance", fd)
	}
	if n, err := u.SendBatch([]replica.Message{{Buf: []byte("x"), Addr: u.LocalAddr()}}); n != 1 || err != nil {
		t.Fatalf("SendBatch = %d, %v", n, err)
	}
	ms := udMsgs(1, 64)
	if n, err := u.RecvBatch(ms, 5*time.Second); n != 1 || err != nil {
		t.Fatalf("RecvBatch = %d, %v: the socket works without the poller", n, err)
	}
}
