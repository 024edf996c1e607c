package replica_test

// The sender's "the ring moved" reaches the session writers through the
// server's wake relay, and only when a writer sleeps on it.

import (
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
// records cost the sender no Kick and the relay no wake-up.
func TestLiveDatagramsKickNoRelay(t *testing.T) {
	p, src := pairSource(t, 16384)
	srv, mr := serveMirrored(t, p, src, "unicast", fromOldest, nil)
	src.push(10)
	mr.waitFor(10, 10*time.Second)
	waitUntil(t, 10*time.Second, "the session to go live", func() bool { return replica.LiveSessions(srv) == 1 })
	before := replica.RelayStats(srv)
	src.pushPaced(2000, 20, 200*time.Microsecond)
	st := mr.waitFor(2010, 10*time.Second)
	mr.close()
	wantAll(t, st, 2010, "")
	if after := replica.RelayStats(srv); after != before {
		t.Fatalf("relay %+v → %+v while no writer listened", before, after)
	}
}
