package replica_test

// A graceful stop: Serve's context ends (SIGTERM in the CLI). The source
// sends what its ring holds, announces it, lets its mirrors repair what
// they lost and closes cleanly, within a bound.

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// stopGrace is the source's bound on a graceful stop.
const stopGrace = replica.StopGrace

// stopServe ends the source's Serve context and waits at most within for
// Serve to return nil; it returns how long that took and the server's
// counters after it. The server is closed then.
func stopServe(t *testing.T, src *source, within time.Duration) (time.Duration, replica.ServerStats) {
	t.Helper()
	srv, start := src.srv, time.Now()
	src.stop()
	select {
	case err := <-src.done:
		if err != nil {
			t.Errorf("Serve after its context ended: %v", err)
		}
	case <-time.After(within):
		src.done <- nil // for the cleanup's close, which Close unblocks
		t.Fatalf("Serve did not return within %v of its context's end: %+v", within, srv.Stats())
	}
	took := time.Since(start)
	st := srv.Stats()
	srv.Close()
	src.srv = nil
	return took, st
}

// disconnects records a mirror's first disconnection: when, why, and the
// mirror's Stats as the event saw them.
type disconnects struct {
	mu    sync.Mutex
	at    time.Time
	err   error
	n     int
	tb    testing.TB
	m     *replica.Mirror // set once the mirror is made
	stats replica.MirrorStats
}

// watch names the mirror whose Stats the first disconnection records.
func (d *disconnects) watch(m *replica.Mirror) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m = m
}

func (d *disconnects) event(e replica.MirrorEvent) {
	if e.Kind != replica.MirrorDisconnected {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n++; d.n == 1 {
		d.at, d.err = time.Now(), e.Err
		if d.m != nil {
			d.stats = d.m.Stats()
		}
	}
	if d.tb != nil { // a failure then shows why the mirror was cut off
		d.tb.Logf("mirror disconnected (%d): %v", d.n, e.Err)
	}
}

// seen is the mirror's Stats as the first disconnection saw them.
func (d *disconnects) seen() replica.MirrorStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

func (d *disconnects) first() (int, time.Time, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n, d.at, d.err
}

// TestGracefulStopDeliversTail: a source with a long Linger holds its
// last records back in a partial frame; its Serve context ends before the
// linger passes. The stop sends them at once and announces them (a
// heartbeat), the mirror gets every record — over the datagram, or, when
// it lost that datagram, by NAK over a TCP session that waits for it —
// and the source then closes the connection cleanly (the mirror reads an
// orderly end, long before the stop's deadline). Without the graceful
// stop the mirror is left at the first record.
func TestGracefulStopDeliversTail(t *testing.T) {
	const (
		linger = 2 * time.Second
		n      = 10 // the tail fits one partial frame
	)
	cases := []struct {
		name     string
		mode     string
		loseTail bool // the mirror loses every DATA datagram once it has record 1
		keyed    bool
		v1       bool // a mirror without telemetry: no STATUS says it is done
		loop     bool // the server and the mirror run on Loops
	}{
		{name: "unicast", mode: "unicast"},
		{name: "multicast", mode: "multicast"},
		{name: "unicast-tail-lost", mode: "unicast", loseTail: true},
		{name: "multicast-tail-lost", mode: "multicast", loseTail: true},
		{name: "multicast-tail-lost-v1", mode: "multicast", loseTail: true, v1: true},
		{name: "unicast-keyed-tail-lost", mode: "unicast", loseTail: true, keyed: true},
		{name: "tcp", mode: "tcp"},
		{name: "unicast-tail-lost-loop", mode: "unicast", loseTail: true, loop: true},
		{name: "tcp-loop", mode: "tcp", loop: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, src := pairSource(t, 1024)
			scfg, mcfg := transportConfigs(tc.mode)
			scfg.Linger, scfg.Events = linger, logEvents(t)
			mcfg.From, mcfg.NoTelemetry = fromOldest, tc.v1
			if tc.keyed {
				scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
			}
			if tc.loop {
				scfg.Loop, mcfg.Loop = runLoop(t, p.A, replica.WaitAdaptive), runLoop(t, p.B, replica.WaitAdaptive)
			}
			// The tail is lost by what the mirror had when it was pushed,
			// not by a frame's first sequence: a loaded sender may carry
			// record 1 in the tail's frame (the mirror then had it by TCP).
			var losing atomic.Bool
			var faults *faulty.Faults
			if tc.loseTail {
				faults = &faulty.Faults{Drop: func(k wire.Kind, _, _ uint64) bool { return k == wire.KindData && losing.Load() }}
			}
			dis := disconnects{tb: t}
			mcfg.Events = dis.event
			srv := src.serve(scfg)
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, faults)
			dis.watch(mr.m)
			mr.connected()
			if tc.mode != "tcp" {
				waitDatagrams(t, mr)
			}
			start := time.Now() // the first frame leaves after this: the linger ends after start+linger
			src.push(1)         // a lone record: it leaves at once
			mr.waitFor(1, 5*time.Second)
			losing.Store(true)
			src.push(n - 1) // a partial frame, held back by the linger
			before := srv.Stats()
			stopAt := time.Now()
			src.stop()
			// Only the stop can deliver the tail this soon.
			if d := time.Until(start.Add(linger)); d > 0 {
				if !poll(d, time.Millisecond, func() bool { return mr.m.Stats().Next > n }) {
					_, at, why := dis.first()
					t.Fatalf("the tail did not arrive within %v of the stop: mirror %+v; server %+v; disconnected %v after the stop (%v)",
						d, mr.m.Stats(), srv.Stats(), at.Sub(stopAt), why)
				}
			} else {
				t.Fatalf("too slow: the linger (%v) had passed before the stop", linger)
			}
			took, sst := stopServe(t, src, linger+stopGrace+5*time.Second)
			t.Logf("Serve returned %v after its context ended; server %+v", took, sst)
			if sst.Heartbeats <= before.Heartbeats {
				t.Errorf("no heartbeat at the stop: %d before, %d after", before.Heartbeats, sst.Heartbeats)
			}
			if tc.mode != "tcp" && (sst.LastSent != n || sst.Records != n) {
				t.Errorf("the stop sent up to %d (%d records by datagram), want %d", sst.LastSent, sst.Records, n)
			}
			// The source closed the connection cleanly once the mirror had
			// everything: an orderly end, before the stop's deadline.
			testenv.Until(t, 5*time.Second, "the mirror's disconnection", func() bool { k, _, _ := dis.first(); return k > 0 })
			_, at, why := dis.first()
			if !errors.Is(why, replica.ErrPeerClosed) {
				t.Errorf("the mirror's connection ended with %v, want an orderly close (ErrPeerClosed)", why)
			}
			if at.Sub(stopAt) >= stopGrace {
				t.Errorf("the source closed the connection %v after the stop: at its deadline, not when the mirror was done", at.Sub(stopAt))
			}
			// A telemetry mirror's STATUS said it had everything before the
			// source closed: its Stats say so from the disconnection on
			// (the last step's counters are published before the event).
			if got := dis.seen(); !tc.v1 && got.Next != n+1 {
				t.Errorf("Stats at the disconnection: next %d, want %d: %+v", got.Next, n+1, got)
			}
			// The mirror's Run publishes what it applied and final Stats.
			mr.stop()
			select {
			case <-mr.done:
			case <-time.After(10 * time.Second):
				t.Fatal("mirror did not stop")
			}
			st := mr.m.Stats()
			t.Logf("mirror %+v", st)
			wantAll(t, st, n, "")
			oneConnection(t, st)
			if st.Next != n+1 || st.Heartbeat != n || st.Lag != 0 {
				t.Errorf("final stats: next %d, heartbeat %d, lag %d; want %d, %d, 0", st.Next, st.Heartbeat, st.Lag, n+1, n)
			}
			if tc.loseTail && (st.NaksSent == 0 || st.Retransmitted < n-1) {
				t.Errorf("the lost tail was not repaired by NAK: %d NAKs, %d retransmitted", st.NaksSent, st.Retransmitted)
			}
			mr.close()
			sameSlots(t, src.path, mr.path, 1)
		})
	}
}

// TestGracefulStopBounded: a peer that asked for the whole history and
// never reads, and one that never says HELLO, cannot hold a graceful
// stop: Serve returns about stopGrace after its context ended (a blocked
// write would otherwise wait its 10 s timeout, an idle handshake its
// HandshakeTimeout), and the legitimate mirror still has every record.
func TestGracefulStopBounded(t *testing.T) {
	lan, src := lanSource(t, 4, 1<<16)
	src.push(60000) // 3.4 MB of history: more than any socket buffer
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup(), Events: logEvents(t)})
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	mr.waitFor(60000, 20*time.Second)
	c := dialNonReader(t, lan.Hosts[2], srv.Addr().String())
	defer c.Close()
	// A TCP stream of the whole history, never read.
	if _, err := c.Write(wire.AppendHello(nil, wire.StartOldest, wire.Hello{})); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "the history streaming to the non-reader", func() bool { return srv.Stats().TCPFrames > 0 })
	dialTCP(t, lan.Hosts[3], srv.Addr().String()) // never says HELLO
	testenv.Until(t, 10*time.Second, "the non-reader's session", func() bool { return srv.Stats().Mirrors == 2 })
	src.push(100)
	took, sst := stopServe(t, src, stopGrace+1500*time.Millisecond)
	t.Logf("Serve returned %v after its context ended; server %+v", took, sst)
	// The non-reader is owed its history: the stop waited for it until
	// the deadline, then cut it off (an ungraceful stop returns at once).
	if took < stopGrace/2 {
		t.Errorf("Serve returned %v after its context ended: the stop did not wait for the session it owed", took)
	}
	mr.waitFor(60100, 5*time.Second)
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}
