package replica_test

// Admission: a refused peer is told why, a handshake has a deadline, a
// full pool of connections not live yet evicts its oldest, and refusals
// are told once a second per kind.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// readRefusal reads the ERROR frame a refused connection is sent and
// then the end of the connection; it returns the frame's text.
func readRefusal(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("no ERROR frame: %v", err)
	}
	h, err := wire.ParseHeader(b, wire.MaxErrorLen)
	if err != nil || h.Kind != wire.KindError {
		t.Fatalf("expected ERROR: %+v %v", h, err)
	}
	p := make([]byte, h.Len)
	if _, err := io.ReadFull(c, p); err != nil {
		t.Fatal(err)
	}
	msg, err := wire.ParseError(p)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(b); n != 0 || err == nil {
		t.Fatalf("after the ERROR frame: %d bytes, %v; want the end", n, err)
	}
	return msg
}

// connectOnce connects a fresh mirror of src from ns and returns its
// error (the mirror is closed).
func connectOnce(t *testing.T, ns *netns.NS, iface netip.Addr, src *source, cfg replica.MirrorConfig) error {
	t.Helper()
	cfg.Ring, cfg.Once = shmDir(t)+"/mirror", true
	m := newMirrorOf(t, src, iface, cfg)
	defer m.Close()
	var err error
	ns.Do(func() error { err = m.Connect(context.Background()); return nil })
	return err
}

// TestRefusalTold: past MaxPendingPerAddr a connection is sent an ERROR
// frame naming the limit and closed; a mirror, keyed or not, reports that
// text. Connections from another address are admitted.
func TestRefusalTold(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		lan, src := lanSource(t, 3, 1024)
		var mcfg replica.MirrorConfig
		scfg := replica.ServerConfig{MaxPendingPerAddr: 2, HandshakeTimeout: time.Minute}
		if keyed {
			scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
		}
		srv := src.serve(scfg)
		dialTCP(t, lan.Hosts[2], srv.Addr().String()) // idle: not live
		dialTCP(t, lan.Hosts[2], srv.Addr().String())
		msg := readRefusal(t, dialTCP(t, lan.Hosts[2], srv.Addr().String()))
		if !strings.Contains(msg, "max-pending-per-addr") {
			t.Fatalf("keyed %v: the ERROR says %q", keyed, msg)
		}
		err := connectOnce(t, lan.Hosts[2], lan.Addrs[2], src, mcfg)
		if !errors.Is(err, replica.ErrRefused) || !strings.Contains(err.Error(), "max-pending-per-addr") {
			t.Fatalf("keyed %v: a mirror past the address's limit: %v", keyed, err)
		}
		if err := connectOnce(t, lan.Hosts[1], lan.Addrs[1], src, mcfg); err != nil {
			t.Fatalf("keyed %v: a mirror from another address: %v", keyed, err)
		}
		if st := srv.Stats(); st.RefusedAddrPending != 2 || st.Refused != 2 || st.BadFrames != 0 {
			t.Fatalf("keyed %v: %+v", keyed, st)
		}
		t.Logf("keyed %v: the mirror says %v", keyed, err)
		src.close()
	}
}

// TestHandshakeDeadline: a peer that says nothing, or begins TLS and
// stalls, is told after HandshakeTimeout that its handshake was not done,
// and closed: counted as a handshake timeout, not a protocol error.
func TestHandshakeDeadline(t *testing.T) {
	p, src := pairSource(t, 1024)
	for _, keyed := range []bool{false, true} {
		scfg := replica.ServerConfig{HandshakeTimeout: 300 * time.Millisecond}
		if keyed {
			scfg.Key = testKey(t, 1)
		}
		srv := src.serve(scfg)
		c := dialTCP(t, p.B, srv.Addr().String())
		if keyed {
			if _, err := c.Write([]byte{0x16, 0x03, 0x01}); err != nil { // a TLS record begins
				t.Fatal(err)
			}
		}
		start := time.Now()
		msg := readRefusal(t, c)
		took := time.Since(start)
		if !strings.Contains(msg, "not done within 300ms") || took < 250*time.Millisecond || took > 3*time.Second {
			t.Fatalf("keyed %v: after %v the ERROR says %q", keyed, took, msg)
		}
		if st := srv.Stats(); st.HandshakeTimeouts != 1 || st.Refused != 1 || st.BadFrames != 0 {
			t.Fatalf("keyed %v: %+v", keyed, st)
		}
		src.close()
	}
}

// TestEvictOldest: with MaxPending connections not live yet, each
// newcomer evicts the oldest, which is told why; a mirror then connects
// and replicates although the pool is full of idle connections.
func TestEvictOldest(t *testing.T) {
	lan, src := lanSource(t, 3, 1024)
	srv := src.serve(replica.ServerConfig{MaxPending: 4, MaxPendingPerAddr: -1})
	var cs []net.Conn
	for i := range 4 {
		cs = append(cs, dialTCP(t, lan.Hosts[2], srv.Addr().String()))
		// Admitted in order: the next dial waits for this one's admission
		// (the pool is not full yet, so nothing is refused or evicted).
		testenv.Until(t, 5*time.Second, "admitted", func() bool { return admittedConns(srv) == i+1 })
	}
	for i := range 2 {
		dialTCP(t, lan.Hosts[2], srv.Addr().String())
		if msg := readRefusal(t, cs[i]); !strings.Contains(msg, "evicted") || !strings.Contains(msg, "oldest") {
			t.Fatalf("connection %d: the ERROR says %q", i+1, msg)
		}
	}
	if st := srv.Stats(); st.Evicted != 2 || st.Refused != 2 {
		t.Fatalf("%+v", st)
	}
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest}, nil)
	src.push(100)
	mr.waitFor(100, 5*time.Second)
	if st := mr.m.Stats(); st.Connects != 1 {
		t.Fatalf("the mirror connected %d times", st.Connects)
	}
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}

// admittedConns counts the connections the server holds open.
func admittedConns(srv *replica.Server) int { return replica.OpenConns(srv) }

// TestRefusedToldPerKind: refusals are told at most once a second per
// kind, each event with the count of its kind's refusals not told since
// the previous one; another kind is told meanwhile.
func TestRefusedToldPerKind(t *testing.T) {
	lan, src := lanSource(t, 3, 1024)
	type told struct {
		e     replica.ServerEvent
		count uint64 // the kind's refusals when it was told
		at    time.Time
	}
	var (
		mu     sync.Mutex
		events []told
		srv    *replica.Server
		ready  = make(chan struct{})
	)
	srv = src.serve(replica.ServerConfig{MaxPendingPerAddr: 1, HandshakeTimeout: 300 * time.Millisecond,
		Events: func(e replica.ServerEvent) {
			if e.Kind != replica.EventRefused {
				return
			}
			<-ready
			n := srv.Stats().RefusedOf(e.Refusal)
			mu.Lock()
			events = append(events, told{e, n, time.Now()})
			mu.Unlock()
		}})
	close(ready)
	of := func(k replica.RefusalKind) []told {
		mu.Lock()
		defer mu.Unlock()
		var out []told
		for _, e := range events {
			if e.e.Refusal == k {
				out = append(out, e)
			}
		}
		return out
	}
	dialTCP(t, lan.Hosts[2], srv.Addr().String()) // idle: times out after 300 ms
	testenv.Until(t, 5*time.Second, "admitted", func() bool { return admittedConns(srv) == 1 })
	// Connections from the same address, until the kind was told twice:
	// refused, or admitted in the place of one that timed out (kept, so
	// that the next are refused).
	testenv.Until(t, 10*time.Second, "two events of max_pending_per_addr", func() bool {
		c := dialTCP(t, lan.Hosts[2], srv.Addr().String())
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := io.Copy(io.Discard, c); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			c.Close() // refused
		}
		return len(of(replica.RefusedAddrPending)) >= 2
	})
	ap, to := of(replica.RefusedAddrPending), of(replica.RefusedTimeout)
	if len(to) == 0 || !to[0].at.Before(ap[1].at) {
		t.Fatalf("the handshake timeout was not told while max_pending_per_addr was held back: %+v", events)
	}
	if ap[1].at.Sub(ap[0].at) < time.Second-10*time.Millisecond {
		t.Fatalf("max_pending_per_addr told twice within %v", ap[1].at.Sub(ap[0].at))
	}
	if ap[0].e.Suppressed != 0 || ap[1].e.Suppressed == 0 || ap[1].count != ap[0].count+ap[1].e.Suppressed+1 {
		t.Fatalf("suppressed counts: first %d (of %d), second %d (of %d)", ap[0].e.Suppressed, ap[0].count, ap[1].e.Suppressed, ap[1].count)
	}
	if !errors.Is(ap[1].e.Err, replica.ErrAdmission) || ap[1].e.Refusal.String() != "max_pending_per_addr" {
		t.Fatalf("the event: %+v", ap[1].e)
	}
	t.Logf("told %d of %d refusals of max_pending_per_addr in %v", len(ap), ap[1].count, ap[1].at.Sub(ap[0].at))
}

// TestEvictCatchUp: a session still in its catch-up counts as not live;
// when the pool is full, it is the oldest and is evicted (closed) for a
// newcomer, whose handshake goes on.
func TestEvictCatchUp(t *testing.T) {
	lan, src := lanSource(t, 3, 1<<16)
	src.push(60000) // 3.4 MB of history: more than any socket buffer
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup(), MaxPending: 1})
	c := dialNonReader(t, lan.Hosts[2], srv.Addr().String())
	defer c.Close()
	if _, err := c.Write(wire.AppendHello(nil, wire.StartOldest, wire.Hello{Flags: wire.HelloUDP})); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "the history streaming to the non-reader", func() bool { return srv.Stats().TCPFrames > 0 })
	if err := connectOnce(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{TCPOnly: true}); err != nil {
		t.Fatalf("the newcomer: %v", err)
	}
	biExpectClosed(t, c)
	if st := srv.Stats(); st.Evicted != 1 || st.Refused != 1 {
		t.Fatalf("%+v", st)
	}
}
