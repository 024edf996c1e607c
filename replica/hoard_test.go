package replica_test

// Hoarded handshakes: attackers that hold connections in their handshake
// (idle, or sending a HELLO or a TLS ClientHello one byte at a time) from
// four addresses, hundreds at a time, each reopened as soon as the source
// closes it.

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

const (
	hoardAddrs   = 4                      // attacker addresses
	hoardPerAddr = 100                    // connections each keeps open
	hoardDials   = 1_000_000              // at most this many connections per address
	hoardTries   = 10                     // fresh mirrors, one after the other
	hoardFirst   = 2 * time.Second        // each must have its first record by then
	hoardByte    = 250 * time.Millisecond // a slow connection's pace
	hoardGiveUp  = 20 * time.Second       // how long a locked-out try is measured
	hoardEvery   = 700 * time.Millisecond // a try at most this often
)

// TestHoardedHandshakes: with the attack going on, a fresh mirror gets its
// first record within 2 s in each of ten tries, keyed and unkeyed, with
// the default limits; a mirror live before the attack keeps replicating,
// on its one connection. (TestEvictOldest covers a pool the attackers
// fill: that needs MaxPending/MaxPendingPerAddr addresses.)
func TestHoardedHandshakes(t *testing.T) {
	netns.Require(t)
	t.Run("unkeyed", func(t *testing.T) { hoardTest(t, false) })
	t.Run("keyed", func(t *testing.T) { hoardTest(t, true) })
}

func hoardTest(t *testing.T, keyed bool) {
	lan, src := lanSource(t, 3, 1024)
	var scfg replica.ServerConfig
	var mcfg replica.MirrorConfig
	if keyed {
		scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
	}
	srv := src.serve(scfg)
	src.push(100)
	live := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{Key: mcfg.Key, From: fromOldest}, nil)
	live.waitFor(100, 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var pushed atomic.Uint64
	pushed.Store(100)
	pushing := make(chan struct{})
	defer func() { cancel(); <-pushing }()
	go func() { // a record every 10 ms while the attack lasts
		defer close(pushing)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				src.push(1)
				pushed.Add(1)
			}
		}
	}()
	atk := startHoard(t, ctx, lan, srv.Addr(), keyed)
	// Under way: connections refused at once, others held until the
	// source's deadline closed them (and reopened).
	testenv.Until(t, 30*time.Second, "the attack under way", func() bool {
		return srv.Stats().Refused > 1000 && atk.expired.Load() >= hoardAddrs*8
	})
	every := time.NewTicker(hoardEvery) // the tries span several deadlines
	defer every.Stop()
	for try := range hoardTries {
		<-every.C
		took := firstRecord(t, lan, src, mcfg)
		t.Logf("try %d: first record after %v; attackers opened %d connections, %d held until closed",
			try+1, took.Round(time.Millisecond), atk.opened.Load(), atk.expired.Load())
		if took > hoardFirst {
			t.Fatalf("try %d: the first record took %v (> %v): locked out; server %+v", try+1, took, hoardFirst, srv.Stats())
		}
	}
	// The live mirror kept up on its one connection.
	live.waitFor(pushed.Load(), 5*time.Second)
	cancel()
	<-pushing
	atk.wait()
	st := live.waitFor(pushed.Load(), 5*time.Second)
	t.Logf("server %+v", srv.Stats())
	live.close()
	if st.Connects != 1 || st.Gaps != 0 {
		t.Fatalf("the live mirror was disturbed: %+v", st)
	}
	sameSlots(t, src.path, live.path, 1)
}

// firstRecord starts a fresh mirror of src on the LAN's host 1 and
// returns how long it took to apply its first record (hoardGiveUp at
// most); the mirror is closed before it returns.
func firstRecord(t *testing.T, lan *netns.LAN, src *source, cfg replica.MirrorConfig) time.Duration {
	t.Helper()
	cfg.Ring = shmDir(t) + "/fresh"
	start := time.Now()
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, cfg, nil)
	defer mr.close()
	testenv.Await(hoardGiveUp, func() bool { return mr.m.Stats().Records > 0 })
	return time.Since(start)
}

// hoard is the attack: per address, one dialer in the attacker's
// namespace and hoardPerAddr holders, each holding one connection at a
// time and opening the next as soon as the source closes it.
type hoard struct {
	wg      sync.WaitGroup
	opened  atomic.Int64 // connections opened
	held    atomic.Int64 // connections held open now
	expired atomic.Int64 // connections the source closed after a second or more
}

// startHoard adds hoardAddrs-1 addresses to the LAN's host 2 and starts
// the attack on target from its hoardAddrs addresses, until ctx ends.
// Slow connections send a HELLO (keyed: a TLS record header and the
// ClientHello it announces) one byte per hoardByte; the others are idle.
func startHoard(t *testing.T, ctx context.Context, lan *netns.LAN, target netip.AddrPort, keyed bool) *hoard {
	t.Helper()
	h := &hoard{}
	slow := wire.AppendHello(nil, wire.StartNewest, wire.Hello{})
	if keyed {
		slow = append([]byte{0x16, 0x03, 0x01, 0x02, 0x00}, make([]byte, 512)...)
	}
	base := lan.Addrs[2].As4()
	for i := range hoardAddrs {
		a := base
		if i > 0 {
			a[3] = byte(100 + i)
			if _, err := lan.Hosts[2].Exec("ip", "addr", "add", netip.AddrFrom4(a).String()+"/24", "dev", lan.Ifs[2]); err != nil {
				t.Fatal(err)
			}
		}
		dials := make(chan chan net.Conn)
		local := &net.TCPAddr{IP: net.IP(a[:])}
		lan.Hosts[2].Go(func() { dialer(ctx, dials, local, target) })
		var holders sync.WaitGroup
		for k := range hoardPerAddr {
			holders.Add(1)
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				defer holders.Done()
				var msg []byte
				if k%2 == 1 {
					msg = slow
				}
				h.hold(ctx, dials, msg)
			}()
		}
		h.wg.Add(1)
		go func() { defer h.wg.Done(); holders.Wait(); close(dials) }()
	}
	t.Cleanup(h.wait)
	return h
}

// dialer opens a connection from local to target for each request, in
// the calling thread's namespace, until dials is closed (nil: it failed).
func dialer(ctx context.Context, dials chan chan net.Conn, local *net.TCPAddr, target netip.AddrPort) {
	d := net.Dialer{LocalAddr: local, Timeout: 2 * time.Second}
	for r := range dials {
		c, err := d.DialContext(ctx, "tcp", target.String())
		if err != nil {
			c = nil
		}
		r <- c
	}
}

// hold opens connections through dials, at most hoardDials of them,
// until ctx ends: each sends msg a byte at a time (nothing when msg is
// empty) until the source closes it.
func (h *hoard) hold(ctx context.Context, dials chan chan net.Conn, msg []byte) {
	r := make(chan net.Conn)
	for range hoardDials / hoardPerAddr {
		select {
		case dials <- r:
		case <-ctx.Done():
			return
		}
		c := <-r
		if c == nil {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		h.opened.Add(1)
		h.held.Add(1)
		start := time.Now()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		closed := make(chan struct{})
		if len(msg) > 0 {
			go trickle(closed, c, msg)
		}
		var b [512]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				break
			}
		}
		close(closed)
		if ctx.Err() == nil && time.Since(start) >= time.Second {
			h.expired.Add(1)
		}
		stop()
		c.Close()
		h.held.Add(-1)
	}
}

// trickle writes msg to c one byte per hoardByte until a write fails,
// msg ends or closed is closed.
func trickle(closed chan struct{}, c net.Conn, msg []byte) {
	tick := time.NewTicker(hoardByte)
	defer tick.Stop()
	for _, b := range msg {
		if _, err := c.Write([]byte{b}); err != nil {
			return
		}
		select {
		case <-closed:
			return
		case <-tick.C:
		}
	}
}

func (h *hoard) wait() { h.wg.Wait() }
