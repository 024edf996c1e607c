package replica_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
)

// gatedUDP holds the sender in SendBatch while armed, as a TX ring shared
// by many rings' senders holds it waiting for room.
type gatedUDP struct {
	replica.Transport
	armed   atomic.Bool
	blocked chan struct{} // one token each time a send is held
	release chan struct{}
}

func (g *gatedUDP) SendBatch(ms []replica.Message) (int, error) {
	if g.armed.CompareAndSwap(true, false) {
		g.blocked <- struct{}{}
		select {
		case <-g.release:
		case <-time.After(20 * time.Second): // bounded, whatever the test does
		}
	}
	return g.Transport.SendBatch(ms)
}

// A live session's TCP heartbeat announces only what the datagram
// stream's send calls have finished with: while the sender is held in a
// send, heartbeats over TCP do not tell the mirror of the records in that
// send, so it does not take them for lost (no NAK); once the send returns
// they arrive as datagrams.
func TestTCPHeartbeatDoesNotOvertakeTheSend(t *testing.T) {
	p, src := pairSource(t, 1024)
	g := &gatedUDP{blocked: make(chan struct{}, 1), release: make(chan struct{})}
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup(), NewTransport: func(c replica.UDPConfig) (replica.Transport, error) {
		u, err := replica.NewUDP(c)
		g.Transport = u
		return g, err
	}})
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	src.push(1)
	mr.waitFor(1, 10*time.Second)
	// Past its catch-up (AwaitApplied counts only live mirrors): record 2 can
	// only come by datagram, or by a NAK's answer.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.AwaitApplied(ctx, 1, 1); err != nil {
		t.Fatalf("the mirror never went live: %v", err)
	}
	base := mr.m.Stats() // the catch-up may have counted record 1 as repaired
	g.armed.Store(true)
	src.push(1)
	select {
	case <-g.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the sender never sent record 2")
	}
	// Two TCP heartbeats (200 ms apart, the datagram sender is held): the
	// mirror has had the first for 200 ms when the second is counted.
	hb := srv.Stats().Heartbeats
	testenv.Until(t, 10*time.Second, "two TCP heartbeats", func() bool { return srv.Stats().Heartbeats >= hb+2 })
	if st := mr.m.Stats(); st.Heartbeat > 1 || st.NaksSent != base.NaksSent {
		t.Errorf("while the send was held the mirror heard of sequence %d and sent %d NAKs, want 1 and 0", st.Heartbeat, st.NaksSent-base.NaksSent)
	}
	close(g.release)
	mr.waitFor(2, 10*time.Second)
	if st := mr.m.Stats(); st.NaksSent != base.NaksSent || st.Retransmitted != base.Retransmitted {
		t.Errorf("record 2 was repaired (NAKs %d, retransmitted %d), want it by datagram", st.NaksSent-base.NaksSent, st.Retransmitted-base.Retransmitted)
	}
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}
