package replica_test

// A mirror trusts a source only for what it can check: a GEOMETRY that is
// not the canonical layout, a handshake that stalls while the mirror is
// told to stop, a source that goes silent, a GAP past what the source
// announced. Each source here is a fake one over real TCP sockets between
// two namespaces.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// hsDrain reads c until the mirror closes it (or 10 s pass): the fake
// source stays connected and says nothing.
func hsDrain(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c)
}

// hsHeartbeats sends HEARTBEAT last every 100 ms until the mirror closes
// c or 10 s pass: a source that is alive but sends nothing new.
func hsHeartbeats(c net.Conn, last uint64) {
	tick := time.NewTicker(100 * time.Millisecond) // a source's pace, not a synchronisation
	defer tick.Stop()
	end := time.After(10 * time.Second)
	for {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(wire.AppendEmpty(nil, wire.KindHeartbeat, 0, last)); err != nil {
			return
		}
		select {
		case <-tick.C:
		case <-end:
			return
		}
	}
}

// hsLayout is the layout of cfg.
func hsLayout(t *testing.T, cfg shm.RingConfig) shm.Layout {
	t.Helper()
	l, err := shm.NewLayout(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A source's GEOMETRY whose slots_offset (a fixed ring: the 2^31
// for 4,096 slots of 64 B, which made a 2 GiB mirror ring) or arena_offset
// (a blob ring) is not where the layout puts it is refused with an error
// naming the field; nothing is created, and the fault is counted. The
// same over a keyed (TLS) session.
func TestNonCanonicalGeometryRefused(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	fixed := wire.GeometryOf(hsLayout(t, shm.RingConfig{PayloadSize: 56, Capacity: 4096}))
	fixed.SlotsOffset = 1 << 31
	blob := wire.GeometryOf(hsLayout(t, shm.RingConfig{PayloadSize: 56, Capacity: 1024, ArenaSize: 1 << 16}))
	blob.ArenaOffset += 1 << 30
	send := func(g wire.Geometry) func(net.Conn, uint64) error {
		return func(c net.Conn, _ uint64) error {
			if _, err := c.Write(wire.AppendGeometry(nil, 1, 0, g)); err != nil {
				return err
			}
			hsDrain(c)
			return nil
		}
	}
	for _, tc := range []struct {
		name, field string
		g           wire.Geometry
	}{{"fixed", "slots_offset", fixed}, {"blob", "arena_offset", blob}} {
		f := newFakeSource(t, p.A, p.AAddr, send(tc.g))
		// MaxRingSize keeps a mirror without the check from creating the
		// 2 GiB ring: it would refuse it as too large instead.
		m, ring := f.mirror(t, replica.MirrorConfig{MaxRingSize: 1 << 30})
		var err error
		p.B.Do(func() error { err = m.Connect(context.Background()); return nil })
		if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), tc.field+" = ") {
			t.Errorf("%s: Connect: %v, want wire.ErrMalformed naming %s", tc.name, err, tc.field)
		}
		if _, serr := os.Stat(ring); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the refused mirror ring was created: %v", tc.name, serr)
		}
		if ft := m.Stats(); ft.SourceErrors != 1 {
			t.Errorf("%s: stats %+v, want 1 source error", tc.name, ft)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	t.Run("keyed", func(t *testing.T) { keyedNonCanonical(t, p, fixed) })
}

// keyedNonCanonical serves g inside TLS with a shared key.
func keyedNonCanonical(t *testing.T, p *netns.Pair, g wire.Geometry) {
	key, err := auth.NewKey([]byte("a shared secret of at least 32 bytes, for the test"))
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := p.A.Do(func() (err error) { ln, err = net.Listen("tcp", p.AAddr.String()+":0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, key.ServerTLS())
		b := make([]byte, wire.HeaderSize+wire.HelloSize)
		if _, err := io.ReadFull(tc, b); err != nil {
			done <- err
			return
		}
		inc := [wire.SessionSize]byte{1, 2, 3, 4, 5, 6, 7, 8}
		sess := wire.AppendSession(nil, wire.Session{ID: 0x0807060504030201, Incarnation: inc})
		_, err = tc.Write(append(wire.AppendGeometry(nil, 1, wire.GeometrySession64, g), sess...))
		hsDrain(tc)
		done <- err
	}()
	ring := shmDir(t) + "/mirror"
	m, err := replica.NewMirror(replica.MirrorConfig{Source: ln.Addr().String(), Ring: ring, TCPOnly: true, Key: key, MaxRingSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p.B.Do(func() error { err = m.Connect(context.Background()); return nil })
	if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "slots_offset = ") {
		t.Errorf("keyed: Connect: %v, want wire.ErrMalformed naming slots_offset", err)
	}
	if _, serr := os.Stat(ring); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("keyed: the refused mirror ring was created: %v", serr)
	}
	if ferr := <-done; ferr != nil {
		t.Errorf("keyed fake source: %v", ferr)
	}
}

// A source that accepts the connection, reads HELLO and answers nothing:
// when Run's context ends (SIGTERM in the CLI) Run returns within 1 s,
// not at the 10 s handshake deadline.
func TestStalledHandshakeEndsOnCancel(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	hello := make(chan struct{})
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		close(hello)
		hsDrain(c)
		return nil
	})
	m, _ := f.mirror(t, replica.MirrorConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	ran := p.B.Go(func() { err = m.Run(ctx) })
	select {
	case <-hello:
	case <-time.After(10 * time.Second):
		t.Fatal("the mirror sent no HELLO")
	}
	start := time.Now()
	cancel()
	select {
	case <-ran:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
	if took := time.Since(start); took > time.Second || err != nil {
		t.Fatalf("Run returned %v after %v, want nil within 1 s", err, took)
	}
	if ferr := <-f.errc; ferr != nil {
		t.Fatalf("fake source: %v", ferr)
	}
}

// hsEvents records a mirror's events.
type hsEvents struct {
	mu  sync.Mutex
	evs []replica.MirrorEvent
	at  []time.Time
}

func (e *hsEvents) add(ev replica.MirrorEvent) {
	e.mu.Lock()
	e.evs, e.at = append(e.evs, ev), append(e.at, time.Now())
	e.mu.Unlock()
}

// first is the first event of kind k and when it came.
func (e *hsEvents) first(k replica.MirrorEventKind) (replica.MirrorEvent, time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, ev := range e.evs {
		if ev.Kind == k {
			return ev, e.at[i], true
		}
	}
	return replica.MirrorEvent{}, time.Time{}, false
}

// A source that sends GEOMETRY and five records, then nothing at all (no
// record, no heartbeat) for longer than SourceTimeout is disconnected
// (ErrSourceSilent, counted) and redialled; the next connection goes on.
// The mirror runs on its own thread, and on a Loop that blocks when idle.
func TestSilentSourceRedialled(t *testing.T) {
	netns.Require(t)
	t.Run("own thread", func(t *testing.T) { silentSource(t, netns.NewPair(t), nil) })
	t.Run("loop", func(t *testing.T) {
		p := netns.NewPair(t)
		silentSource(t, p, runLoop(t, p.B, replica.WaitBlock))
	})
}

func silentSource(t *testing.T, p *netns.Pair, loop *replica.Loop) {
	geom := fakeGeometry(t)
	var m *replica.Mirror
	serve := func(silent bool) func(net.Conn, uint64) error {
		return func(c net.Conn, start uint64) error {
			if start == wire.StartOldest || start == wire.StartNewest {
				start = 1
			}
			b := wire.AppendGeometry(nil, start, 0, geom)
			b = append(b, dataFrame(0, start, 5, 1)...)
			if _, err := c.Write(b); err != nil {
				return err
			}
			if silent {
				hsDrain(c)
			} else {
				hsHeartbeats(c, start+4)
			}
			return nil
		}
	}
	f := newFakeSource(t, p.A, p.AAddr, serve(true), serve(false))
	var evs hsEvents
	const timeout = 600 * time.Millisecond
	m, ring := f.mirror(t, replica.MirrorConfig{From: fromOldest, SourceTimeout: timeout,
		Reconnect: 50 * time.Millisecond, Events: evs.add, Loop: loop})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	ran := p.B.Go(func() { err = m.Run(ctx) })
	waitUntil(t, 10*time.Second, "the second connection's records", func() bool { return m.Stats().Next >= 11 })
	cancel()
	<-ran
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	conn, connAt, _ := evs.first(replica.MirrorConnected)
	disc, discAt, ok := evs.first(replica.MirrorDisconnected)
	if !ok || !errors.Is(disc.Err, replica.ErrSourceSilent) {
		t.Fatalf("first disconnect %+v (found %v), want ErrSourceSilent; first connect %+v", disc, ok, conn)
	}
	if silent := discAt.Sub(connAt); silent < timeout || silent > timeout+time.Second {
		t.Errorf("disconnected %v after connecting, want SourceTimeout %v (+ up to 1 s)", silent, timeout)
	}
	st := m.Stats()
	if st.Connects != 2 || st.SourceSilent != 1 || st.SourceErrors != 0 {
		t.Errorf("stats %+v: want 2 connects, 1 silent source", st)
	}
	t.Logf("%v after %v", disc.Err, discAt.Sub(connAt))
	m.Close()
	seqs, _ := readAll(t, ring)
	if err := checkContiguous(seqs, 1, 10); err != nil {
		t.Fatal(err)
	}
}

// A GAP past everything the source announced (records 1..10, heartbeat
// 10; the GAP names 2^64−2), followed by nothing but heartbeats of 10, is
// never applied: the session ends with a protocol error (counted) once
// SourceTimeout passes without a record or heartbeat backing it.
func TestGapPastAnnouncedRefused(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	geom := fakeGeometry(t)
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		b := wire.AppendGeometry(nil, 1, 0, geom)
		b = append(b, dataFrame(0, 1, 10, 1)...)
		b = wire.AppendEmpty(b, wire.KindHeartbeat, 0, 10)
		b = wire.AppendEmpty(b, wire.KindGap, 0, 1<<64-2)
		if _, err := c.Write(b); err != nil {
			return err
		}
		hsHeartbeats(c, 10)
		return nil
	})
	m, ring := f.mirror(t, replica.MirrorConfig{Once: true, From: fromOldest, SourceTimeout: time.Second})
	err := runIn(p.B, m, 15*time.Second)
	if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "GAP to 18446744073709551614") {
		t.Fatalf("Run: %v, want wire.ErrMalformed naming the GAP", err)
	}
	st := m.Stats()
	if st.Next != 11 || st.Gaps != 0 || st.SourceErrors != 1 {
		t.Errorf("stats %+v: want next 11, no gap, 1 protocol fault", st)
	}
	t.Logf("%v", err)
	m.Close()
	seqs, _ := readAll(t, ring)
	if err := checkContiguous(seqs, 1, 10); err != nil {
		t.Fatal(err)
	}
}

// A source streaming over TCP that the ring lapped sends a GAP to the
// oldest record it still holds, past anything it announced, then that
// record: the mirror applies the GAP with the record, as before.
func TestGapBackedByRecordApplied(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	geom := fakeGeometry(t)
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		b := wire.AppendGeometry(nil, 1, 0, geom)
		b = append(b, dataFrame(0, 1, 10, 1)...)
		b = wire.AppendEmpty(b, wire.KindGap, 0, 500)
		b = append(b, dataFrame(0, 500, 10, 1)...)
		b = wire.AppendEmpty(b, wire.KindHeartbeat, 0, 509)
		if _, err := c.Write(b); err != nil {
			return err
		}
		return nil // a clean close: Run (Once) returns nil
	})
	m, _ := f.mirror(t, replica.MirrorConfig{Once: true, From: fromOldest})
	if err := runIn(p.B, m, 15*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := m.Stats(); st.Next != 510 || st.Gaps != 489 || st.SourceErrors != 0 {
		t.Fatalf("stats %+v: want next 510 after a gap of 489", st)
	}
}
