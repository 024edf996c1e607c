package replica_test

// The sender's "the ring moved" reaches the session writers through the
// server's wake relay, and only when a writer sleeps on it.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// A TCP-only mirror's writer sleeps on its wake channel between records:
// the sender kicks the relay, which finds its goroutine parked and wakes
// it through the eventfd; every record arrives.
func TestStreamWritersWokenByRelay(t *testing.T) {
	p, src := pairSource(t, 16384)
	srv, mr := serveMirrored(t, p, src, "tcp", fromOldest, nil)
	src.push(10)
	mr.waitFor(10, 10*time.Second)
	before := replica.RelayStats(srv)
	src.pushPaced(200, 1, 500*time.Microsecond) // one record at a time: the writer sleeps between them
	st := mr.waitFor(210, 10*time.Second)
	mr.close()
	wantAll(t, st, 210, "")
	after := replica.RelayStats(srv)
	if after.Writes <= before.Writes || after.Fires <= before.Fires {
		t.Fatalf("relay %+v → %+v: the sender did not wake the writer through it", before, after)
	}
}

// Once datagrams carry a mirror's records its writer no longer listens:
// records cost the sender no Kick for the sessions.
func TestLiveDatagramsKickNoRelay(t *testing.T) {
	p, src := pairSource(t, 16384)
	srv, mr := serveMirrored(t, p, src, "unicast", fromOldest, nil)
	src.push(10)
	mr.waitFor(10, 10*time.Second)
	waitUntil(t, 10*time.Second, "the session to go live", func() bool { return replica.LiveSessions(srv) == 1 })
	before := replica.SessionKicks(srv)
	src.pushPaced(2000, 20, 200*time.Microsecond)
	st := mr.waitFor(2010, 10*time.Second)
	mr.close()
	wantAll(t, st, 2010, "")
	if after := replica.SessionKicks(srv); after != before {
		t.Fatalf("%d kicks for the sessions while no writer listened", after-before)
	}
}

// A mirror's STATUS leaves through its status relay: the run loop kicks
// it, its goroutine writes the frame, and the source's Wait hears it.
func TestStatusWrittenByRelay(t *testing.T) {
	p, src := pairSource(t, 1024)
	srv := src.serve(replica.ServerConfig{})
	src.push(5)
	m := newMirrorOf(t, src, p.BAddr, replica.MirrorConfig{TCPOnly: true, From: fromOldest,
		Ring: filepath.Join(t.TempDir(), "mirror"), StatusInterval: time.Hour})
	defer m.Close()
	connectIn(t, p.B, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() { n, _ := srv.Wait(ctx, 1, 5); done <- n }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := m.Step(); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-done:
			if n != 1 {
				t.Fatalf("Wait(1, 5) = %d", n)
			}
			if st := replica.StatusRelayStats(m); st.Fires == 0 {
				t.Fatalf("status relay %+v: the STATUS did not go through it", st)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Wait never returned; status relay %+v", replica.StatusRelayStats(m))
		}
	}
}
