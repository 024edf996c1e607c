package replica_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// A mirror parked waiting for datagrams is woken by a TCP frame at once:
// its sleep ends by the reader's notification, not by its bound (on the
// old loop the frame waited in the channel until RecvBatch's 1 ms wait in
// the netpoller ran out).
func TestParkedMirrorWakesOnTCPFrame(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	geom := fakeGeometry(t)
	send := make(chan struct{})
	done := make(chan struct{})
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		// Datagrams by unicast to a port nobody sends from: the mirror
		// opens its UDP socket, punches, and parks on it.
		b := wire.AppendGeometry(nil, 1, wire.GeometryMulticast, geom)
		b = wire.AppendMulticast(b, wire.Multicast{Port: 7999, MTU: 1472, TTL: 1, Session: 9})
		b = append(b, dataFrame(9, 1, 1, 1)...)
		if _, err := c.Write(b); err != nil {
			return err
		}
		<-send
		if _, err := c.Write(dataFrame(9, 2, 1, 1)); err != nil {
			return err
		}
		<-done
		return nil
	})
	cfg := replica.MirrorConfig{Source: f.ln.Addr().String(), Ring: filepath.Join(t.TempDir(), "mirror"),
		Unicast: true, Iface: p.BAddr, Wait: replica.WaitBlock, NoTelemetry: true}
	m, err := replica.NewMirror(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := p.B.Go(func() { m.Run(ctx) })
	defer func() { close(done); cancel(); <-ran; m.Close() }()
	waitUntil(t, 5*time.Second, "the first record", func() bool { return m.Stats().Next == 2 })
	waitUntil(t, 5*time.Second, "the mirror parked", func() bool { return m.Stats().Wait.Sleeps > 0 })
	before := m.Stats().Wait
	close(send)
	waitUntil(t, 5*time.Second, "the second record", func() bool { return m.Stats().Next == 3 })
	after := m.Stats().Wait
	if after.Wakeups <= before.Wakeups {
		t.Fatalf("wait stats before %+v, after %+v: the TCP frame did not wake the parked mirror", before, after)
	}
}

// Every wait mode replicates exactly over every transport, every 7th
// DATA datagram lost and repaired: the mirror ring ends holding the
// source's bytes.
func TestWaitModesReplicate(t *testing.T) {
	for _, name := range replica.WaitModes() {
		wm, err := replica.ParseWaitMode(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			eachMode(t, allModes, func(t *testing.T, mode string) {
				p, src := pairSource(t, 1<<13)
				var data uint64 // DATA datagrams seen (under the faulty transport's lock)
				faults := &faulty.Faults{Drop: func(k wire.Kind, _, _ uint64) bool {
					if k != wire.KindData {
						return false
					}
					data++
					return data%7 == 0
				}}
				scfg, mcfg := transportConfigs(mode)
				scfg.Wait, mcfg.Wait = wm, wm
				src.serve(scfg)
				mr := startMirror(t, p.B, p.BAddr, src, mcfg, faults)
				mr.connected()
				src.pushPaced(3000, 50, 200*time.Microsecond)
				mr.waitFor(3000, 20*time.Second)
				mr.close()
				if st := mr.m.Stats(); st.Next != 3001 || st.Gaps != 0 {
					t.Fatalf("mirror stats %+v", st)
				}
				sameSlots(t, src.path, mr.path, 1)
			})
		})
	}
}

// A reader sees the records of a batch's first datagram before the last
// one is applied: the mirror publishes per datagram. Published hears of
// the batch once, after its last datagram (a hub's Handoff then sends the
// batch in one go): never between two datagrams of a batch, and of every
// record in the end.
func TestPublishPerDatagram(t *testing.T) {
	p, src := pairSource(t, 1<<12)
	scfg, mcfg := transportConfigs("multicast")
	scfg.Batch = 1 // one record per datagram
	mcfg.From = replica.From{Mode: replica.FromLatest}
	src.serve(scfg)
	var ring *shm.Ring
	var seenEarly, calls, toldEarly int
	var told uint64     // the last sequence Published was called with
	var tells, seen int // Published's calls, and their count at the previous datagram
	mcfg.Published = func(seq uint64) { told, tells = seq, tells+1 }
	mcfg.Ring = filepath.Join(t.TempDir(), "mirror")
	m := newMirrorOf(t, src, p.BAddr, mcfg)
	var late int // datagrams whose records readers did not see yet
	replica.AfterDatagram(m, func(i int, last, batchLast uint64) {
		calls++
		if i > 0 && tells != seen { // Published came between two datagrams of one batch
			toldEarly++
		}
		seen = tells
		if ring == nil {
			var err error
			if ring, err = shm.Open(mcfg.Ring, shm.OpenOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
		w := ring.WriteSeq()
		if last > 0 && w < last {
			late++
		}
		if last > 0 && w >= last && w < batchLast {
			seenEarly++
		}
	})
	connectIn(t, p.B, m)
	src.push(200)
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().Next <= 200 && time.Now().Before(deadline) {
		if _, err := m.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if m.Stats().Next <= 200 {
		t.Fatalf("mirror stats %+v: not every record arrived", m.Stats())
	}
	if ring != nil {
		ring.Close()
	}
	if late != 0 || seenEarly == 0 {
		t.Fatalf("%d datagrams applied: %d not yet visible to readers, %d visible before the last of their batch", calls, late, seenEarly)
	}
	if toldEarly != 0 || told != m.Stats().Next-1 {
		t.Fatalf("Published called %d times between two datagrams of a batch; last told %d, want %d", toldEarly, told, m.Stats().Next-1)
	}
}

// Six yielding hot loops (three sources' senders, three mirrors) and
// their producers on this machine's two cores: each loop gives its CPU
// to whichever has work, and every record arrives.
func TestYieldOversubscribed(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	const n = 3000
	var mirrors []*mirror
	var sources []*source
	for i := range 3 {
		src := newSource(t, p.A, p.AAddr, 1<<13)
		scfg, mcfg := dirConfigs("unicast", i)
		scfg.Wait, mcfg.Wait = replica.WaitYield, replica.WaitYield
		src.serve(scfg)
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		sources, mirrors = append(sources, src), append(mirrors, mr)
	}
	done := make(chan struct{})
	for _, src := range sources {
		go func() {
			defer func() { done <- struct{}{} }()
			src.pushPaced(n, 50, 200*time.Microsecond)
		}()
	}
	for range sources {
		<-done
	}
	for i, mr := range mirrors {
		mr.waitFor(n, 30*time.Second)
		mr.close()
		sameSlots(t, sources[i].path, mr.path, 1)
	}
}

// A mirror connected before Run (Connect, then Run) sleeps on its
// transport's socket too: a datagram ends its sleep.
func TestConnectThenRunWakesOnDatagram(t *testing.T) {
	p, src := pairSource(t, 1<<10)
	scfg, mcfg := transportConfigs("unicast")
	src.serve(scfg)
	mcfg.Wait, mcfg.NoTelemetry = replica.WaitBlock, true
	mcfg.Ring = filepath.Join(t.TempDir(), "mirror")
	m := newMirrorOf(t, src, p.BAddr, mcfg)
	connectIn(t, p.B, m)
	ctx, cancel := context.WithCancel(context.Background())
	ran := p.B.Go(func() { m.Run(ctx) })
	defer func() { cancel(); <-ran; m.Close() }()
	src.push(1)
	waitUntil(t, 5*time.Second, "the first record", func() bool { return m.Stats().Next == 2 })
	// Until the mirror has punched, records come over TCP (its reader
	// ends the sleep through the Waker): wait for its first datagram.
	waitUntil(t, 5*time.Second, "a datagram at the mirror", func() bool { return m.Stats().Datagrams > 0 })
	waitUntil(t, 5*time.Second, "the mirror parked", func() bool { return m.Stats().Wait.Sleeps > 0 })
	before := m.Stats().Wait
	src.push(1)
	waitUntil(t, 5*time.Second, "the second record", func() bool { return m.Stats().Next == 3 })
	if after := m.Stats().Wait; after.Ready <= before.Ready {
		t.Fatalf("wait stats before %+v, after %+v: the datagram did not end the sleep", before, after)
	}
}
