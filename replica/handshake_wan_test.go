package replica_test

// What a real mirror's handshake needs across a WAN: measured through a
// proxy that delays every byte, each way (this kernel has no netem).

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// TestHandshakeAcrossWAN: a mirror, keyed and unkeyed, connects through
// a proxy delaying each direction by 0, 50 and 100 ms (round trips of 0,
// 100 and 200 ms). Its Connect (dial, TLS, HELLO, GEOMETRY) is an upper
// bound of what the source's handshake deadline must cover: the source
// counts from its accept, and the proxy accepts at once, so the source
// sees the mirror's first bytes a one-way delay later than a real link
// would. The default deadline must leave room for two more round trips
// and two lost segments' retransmissions (Linux's RTO is at least
// 200 ms, doubling), so the slowest handshake must take less than a
// third of it.
func TestHandshakeAcrossWAN(t *testing.T) {
	p, src := pairSource(t, 1024)
	src.push(10)
	for _, keyed := range []bool{false, true} {
		scfg, mcfg := replica.ServerConfig{}, replica.MirrorConfig{TCPOnly: true, Once: true}
		if keyed {
			scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
		}
		srv := src.serve(scfg)
		for _, oneWay := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond} {
			proxy := delayProxy(t, p.B, p.BAddr.String()+":0", srv.Addr().String(), oneWay)
			var slowest time.Duration
			for range 5 {
				mcfg.Source, mcfg.Ring = proxy, shmDir(t)+"/mirror"
				m, err := replica.NewMirror(mcfg)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				err = p.B.Do(func() error { return m.Connect(context.Background()) })
				took := time.Since(start)
				m.Close()
				if err != nil {
					t.Fatalf("keyed %v, %v each way: %v", keyed, oneWay, err)
				}
				slowest = max(slowest, took)
			}
			t.Logf("keyed %v, %v each way: the slowest of 5 handshakes took %v", keyed, oneWay, slowest.Round(time.Millisecond))
			if slowest > replica.DefaultHandshakeTimeout/3 {
				t.Errorf("keyed %v, %v each way: a handshake took %v, more than a third of the default deadline %v",
					keyed, oneWay, slowest, replica.DefaultHandshakeTimeout)
			}
		}
		src.close()
	}
}

// delayProxy listens on bind in ns and relays each connection to target
// (dialled from ns), every byte delayed by d in each direction; it
// returns its address. The test's cleanup ends it.
func delayProxy(t *testing.T, ns *netns.NS, bind, target string, d time.Duration) string {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", bind); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var up net.Conn
			if err := ns.Do(func() (err error) { up, err = net.Dial("tcp", target); return err }); err != nil {
				c.Close()
				continue
			}
			go delayCopy(up, c, d)
			go delayCopy(c, up, d)
		}
	}()
	return ln.Addr().String()
}

// delayCopy copies from src to dst, each chunk written d after it was
// read (a link's propagation delay, bandwidth unlimited); it closes both
// when either ends.
func delayCopy(dst, src net.Conn, d time.Duration) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.at)) // the link's delay, not a synchronisation
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}
