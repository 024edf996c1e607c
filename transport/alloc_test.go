package transport_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// After warm-up (the destination's header is built), SendBatch of 32
// messages and RecvBatch without waiting, with and without datagrams
// waiting, do not allocate.
func TestNoAllocs(t *testing.T) {
	xp := newXDPPair(t)
	listenUDP(t, xp.p.A, netip.AddrPortFrom(xp.p.AAddr, 7660)) // never read: the kernel drops what overflows
	dst := netip.AddrPortFrom(xp.p.AAddr, 7660)
	out := make([]replica.Message, 32)
	for i := range out {
		out[i] = replica.Message{Buf: payload(i, 64+i*30), Addr: dst}
	}
	sendAll(t, xp.a, out) // resolves dst
	if a := testing.AllocsPerRun(100, func() {
		if n, err := xp.a.SendBatch(out); n != len(out) || err != nil {
			t.Fatalf("SendBatch = %d, %v", n, err)
		}
	}); a != 0 {
		t.Errorf("SendBatch of %d messages: %v allocations", len(out), a)
	}

	in := newMsgs(32, 2048)
	xp.b.RecvBatch(in, 0)
	if a := testing.AllocsPerRun(100, func() {
		if _, err := xp.b.RecvBatch(in, 0); err != nil {
			t.Fatalf("RecvBatch: %v", err)
		}
	}); a != 0 {
		t.Errorf("RecvBatch(wait 0) with nothing waiting: %v allocations", a)
	}
	// A receive that parks in Go's poller until its timeout: a mirror's
	// idle loop does this every millisecond.
	if a := testing.AllocsPerRun(20, func() {
		if n, err := xp.b.RecvBatch(in, time.Millisecond); n != 0 || err != nil {
			t.Fatalf("RecvBatch(1 ms) = %d, %v", n, err)
		}
	}); a != 0 {
		t.Errorf("RecvBatch(wait 1 ms) that times out: %v allocations", a)
	}

	// With datagrams waiting: send them outside the measured function.
	toB := make([]replica.Message, 32)
	for i := range toB {
		toB[i] = replica.Message{Buf: payload(i, 100), Addr: xp.b.LocalAddr()}
	}
	sendAll(t, xp.a, toB)
	recvInto(t, xp.b, in, len(toB)) // warm-up
	received := 0
	if a := testing.AllocsPerRun(50, func() {
		xp.a.SendBatch(toB)
		// The frames cross the veth asynchronously: take what is there.
		n, err := xp.b.RecvBatch(in, 0)
		if err != nil {
			t.Fatalf("RecvBatch: %v", err)
		}
		received += n
	}); a != 0 {
		t.Errorf("SendBatch + RecvBatch(wait 0) with datagrams waiting: %v allocations", a)
	}
	if received == 0 {
		t.Errorf("RecvBatch(wait 0) never found a datagram waiting; the measurement did not cover receiving")
	}
	t.Logf("received %d datagrams while measuring", received)
}
