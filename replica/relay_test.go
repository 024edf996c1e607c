package replica_test

// The sender's "the ring moved" reaches the session writers through the
// server's wake relay, and only when a writer sleeps on it.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// A TCP-only mirror's writer, caught up, parks and hands its stream to
// the sender, which writes each record's frame itself: records arrive,
// and neither the relay nor the writer is woken for them. Over TLS (a
// keyed source) the writer sleeps on its wake channel and the relay wakes
// it.
func TestStreamRecordsSentDirectly(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		p, src := pairSource(t, 16384)
		scfg, mcfg := transportConfigs("tcp")
		if keyed {
			scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
		}
		srv := src.serve(scfg)
		mcfg.From = fromOldest
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		src.push(10)
		mr.waitFor(10, 10*time.Second)
		relay, direct := replica.RelayStats(srv), srv.Stats().DirectSends
		src.pushPaced(200, 1, 500*time.Microsecond) // one record at a time: the writer parks between them
		st := mr.waitFor(210, 10*time.Second)
		mr.close()
		wantAll(t, st, 210, "")
		sent, fired := srv.Stats().DirectSends-direct, replica.RelayStats(srv).Fires-relay.Fires
		switch {
		case !keyed && (sent < 100 || fired > 20):
			t.Fatalf("plain: %d direct sends, %d relay fires for 200 records", sent, fired)
		case keyed && (sent != 0 || fired == 0):
			t.Fatalf("TLS: %d direct sends, %d relay fires for 200 records", sent, fired)
		}
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
	before := srv.Stats().SessionKicks
	src.pushPaced(2000, 20, 200*time.Microsecond)
	st := mr.waitFor(2010, 10*time.Second)
	mr.close()
	wantAll(t, st, 2010, "")
	if after := srv.Stats().SessionKicks; after != before {
		t.Fatalf("%d kicks for the sessions while no writer listened", after-before)
	}
}

// A mirror's STATUS leaves through its status relay: the run loop kicks
// it, its goroutine writes the frame, and the source's AwaitApplied hears it.
func TestStatusWrittenByRelay(t *testing.T) {
	p, src := pairSource(t, 1024)
	srv := src.serve(replica.ServerConfig{})
	src.push(5)
	m := newMirrorOf(t, src, p.BAddr, replica.MirrorConfig{TCPOnly: true, From: fromOldest,
		Ring: filepath.Join(t.TempDir(), "mirror"), StatusInterval: time.Hour})
	defer m.Close()
	connectIn(t, p.B, m)
	if n, err := stepUntilWaited(t, m, srv, 5); n != 1 {
		t.Fatalf("AwaitApplied(1, 5) = %d, %v; status relay %+v", n, err, replica.StatusRelayStats(m))
	}
	if st := replica.StatusRelayStats(m); st.Fires == 0 {
		t.Fatalf("status relay %+v: the STATUS did not go through it", st)
	}
}

// Two senders, one stream: a sender that finds the stream taken by
// another (Handoff beside the sender, say) skips it, so the one holding
// it looks at write_seq again as it gives the stream back and sends what
// came meanwhile; nothing waits for the writer's heartbeat timer. The
// source's sender is a member of a Loop the test turns, so no other
// thread sends.
func TestStreamGivenBackSendsWhatCame(t *testing.T) {
	srv, src, mr, lt, tt := turnedStream(t, nil)
	var release func() bool
	tt.until("the writer parked", func() bool { release = replica.HoldStream(srv); return release != nil })
	before := srv.Stats().DirectSends
	src.push(1)
	lt.Turn() // the server member's wakeSessions finds the stream taken
	if got := srv.Stats().DirectSends; got != before {
		t.Fatalf("%d direct sends while the stream was held", got-before)
	}
	if release() {
		t.Fatal("giving the stream back asked for the writer")
	}
	if got := srv.Stats().DirectSends - before; got != 1 {
		t.Fatalf("%d direct sends as the stream was given back, want 1", got)
	}
	mr.waitFor(11, 10*time.Second)
}

// A record a sender writes on a parked writer's connection counts as sent
// before its write(2) returns: the mirror may apply it and report it in a
// STATUS first, and the source must not take that STATUS for a forgery
// (it closed the session: "STATUS applied 11, past the last record sent
// (10)"). The hook holds the direct send right after its write until the
// source has the mirror's STATUS (10 s at most).
func TestDirectSendCountedBeforeStatus(t *testing.T) {
	srv, src, mr, lt, tt := turnedStream(t, func(c *replica.MirrorConfig) { c.StatusInterval = time.Millisecond })
	applied := func() uint64 {
		if ms := srv.Mirrors(); len(ms) == 1 {
			return ms[0].Applied
		}
		return 0
	}
	tt.until("the mirror's STATUS for the history", func() bool { return applied() == 10 })
	held, reported, want := 0, false, uint64(10)
	replica.AfterDirectWrite(srv, func() { // no Fatal here: the stream is held
		held++
		reported = poll(10*time.Second, time.Millisecond, func() bool { return applied() == want })
	})
	// A writer woken by its heartbeat timer between the release and the
	// turn sends the record itself: then push another.
	for held == 0 && want < 15 {
		want++ // the record pushed below
		var release func() bool
		tt.until("the writer parked", func() bool { release = replica.HoldStream(srv); return release != nil })
		release()
		src.push(1)
		lt.Turn() // the server member's wakeSessions sends it directly
	}
	replica.AfterDirectWrite(srv, nil)
	switch bad := srv.Stats().BadFrames; {
	case held == 0:
		t.Fatal("no direct send of 5 records")
	case !reported:
		t.Fatalf("the source never had the STATUS of the record it wrote directly (%d sessions closed for a protocol error)", bad)
	case bad != 0:
		t.Fatalf("the source closed %d sessions for a STATUS of a record it had written", bad)
	}
	mr.waitFor(want, 10*time.Second)
}

// turnedStream serves a ring of 10 records to a TCP-only mirror (tweak,
// if set, adjusts its settings) from a source whose sender is a member of
// a Loop the test turns, and returns once the mirror has the 10.
func turnedStream(t *testing.T, tweak func(*replica.MirrorConfig)) (*replica.Server, *source, *mirror, *replica.LoopTurner, turners) {
	netns.Require(t)
	p := netns.NewPair(t)
	l, lt := newTurnedLoop(t)
	tt := turners{tb: t, loops: []*replica.LoopTurner{lt}}
	src := newSource(t, p.A, p.AAddr, 1<<12)
	scfg, mcfg := transportConfigs("tcp")
	scfg.Loop = l
	srv := src.serve(scfg)
	mcfg.From = fromOldest
	if tweak != nil {
		tweak(&mcfg)
	}
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	src.push(10)
	tt.until("the history copied", func() bool { return mr.m.Stats().Next == 11 })
	return srv, src, mr, lt, tt
}

// stepUntilWaited steps m from the test's goroutine until the source's
// AwaitApplied for one mirror to apply seq returns (10 s at most: its
// context ends then), and returns what AwaitApplied did.
func stepUntilWaited(t *testing.T, m *replica.Mirror, srv *replica.Server, seq uint64) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := srv.AwaitApplied(ctx, 1, seq); done <- result{n, err} }()
	for {
		if _, err := m.Step(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			return r.n, r.err
		default:
		}
	}
}
