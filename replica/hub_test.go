package replica_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// TestHubHandoff: a mirror served again in the same process hands each
// datagram's records to the hub's sender (MirrorConfig.Published =
// Server.Handoff): the leaf gets every record, byte-identical, and the
// hub's Handoffs counter shows the records left on the mirror's
// goroutine. The hub's own sender keeps running beside it (heartbeats,
// rounds after its wake-ups), so the race detector sees both paths.
//
// Once handed its records, the hub's sender (wait yield, which polls the
// ring) no longer watches the ring: over the second half of the records
// it waits only in handed sleeps, never in the ring, and a record after a
// long idle wakes it (the heartbeat after data is due sooner).
func TestHubHandoff(t *testing.T) {
	eachMode(t, []string{"unicast", "xdp-unicast"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, 1<<14)
		scfg, mcfg := dirConfigs(mode, 0)
		src.serve(scfg)
		var hub atomic.Pointer[replica.Server]
		mcfg.From = fromOldest
		mcfg.Published = func(seq uint64) {
			if h := hub.Load(); h != nil {
				h.Handoff(seq)
			}
		}
		mid := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mid.connected()

		// The hub serves the mirror ring from the mirror's host, over the
		// mode's transport in the other direction.
		hcfg, lcfg := dirConfigs(mode, 1)
		hcfg.Wait = replica.WaitYield
		hsrc := &source{tb: t, ns: p.B, addr: p.BAddr, path: mid.path}
		srv := hsrc.serve(hcfg)
		t.Cleanup(hsrc.close)
		hub.Store(srv)
		lcfg.From = fromOldest
		leaf := startMirror(t, p.A, p.AAddr, hsrc, lcfg, nil)
		leaf.connected()
		waitDatagrams(t, mid, leaf)

		const n = 3000
		src.pushPaced(n/2, 50, time.Millisecond)
		leaf.waitFor(n/2, 10*time.Second)
		before := srv.Stats()
		src.pushPaced(n/2, 50, time.Millisecond)
		mid.waitFor(n, 10*time.Second)
		leaf.waitFor(n, 10*time.Second)
		hst := srv.Stats()
		t.Logf("hub %+v", hst)
		if hst.Handoffs == 0 || hst.Records == 0 {
			t.Fatalf("the hub's records never left by hand-off: %+v", hst)
		}
		// Signed: a snapshot may fall between a wait's two counts.
		if ring := int64(hst.SenderWaits-hst.HandedSleeps) - int64(before.SenderWaits-before.HandedSleeps); ring > 1 || hst.HandedSleeps == 0 {
			t.Errorf("handed its records, the hub's sender waited %d times on the ring over %d records (handed sleeps %d)", ring, n/2, hst.HandedSleeps)
		}

		// Idle: the datagram heartbeat's interval doubles to 128 ms after
		// seven (counted as datagrams, one destination: Heartbeats counts
		// the TCP session's too).
		waitUntil(t, 10*time.Second, "seven idle heartbeat datagrams of the hub", func() bool {
			return srv.Stats().Datagrams >= hst.Datagrams+7
		})
		woke := srv.Stats().HandedWakeups
		src.push(1)
		leaf.waitFor(n+1, 10*time.Second)
		// Unwoken, the sender would sleep on to its 128 ms deadline, and
		// that sleep would end as a timeout, not as a wake-up.
		waitUntil(t, 10*time.Second, "the hand-off after an idle spell to cut the hub's sender's sleep short", func() bool {
			return srv.Stats().HandedWakeups > woke
		})
		leaf.close()
		mid.close()
		sameSlots(t, src.path, leaf.path, 1)
		wantAll(t, leaf.m.Stats(), n+1, transportLabel(mode))
	})
}

// TestHandoffDuringClose: a hub's mirror calls Handoff on its own thread
// while the server closes. Close waits for a round under way before it
// closes the transport and unmaps the ring, and a later Handoff does
// nothing. Without that wait a round read the unmapped ring (the process
// died of a fault) or sent on a closed transport (the race detector).
func TestHandoffDuringClose(t *testing.T) {
	_, src := pairSource(t, 1<<12)
	scfg, _ := dirConfigs("multicast", 0)
	for i := range 20 {
		srv := src.serve(scfg)
		stop := make(chan struct{})
		done := make(chan int)
		go func() {
			n := 0
			for ; n < 5_000_000; n++ {
				select {
				case <-stop:
					done <- n
					return
				default:
				}
				srv.Handoff(0)
			}
			done <- n
		}()
		waitUntil(t, 10*time.Second, "a hand-off round", func() bool {
			src.push(10)
			return srv.Stats().Handoffs > 0
		})
		src.push(100)
		src.close() // Close, while Handoff runs
		after := srv.Stats().Handoffs
		src.push(100)
		close(stop)
		if n := <-done; n == 0 {
			t.Fatalf("round %d: no Handoff ran", i)
		}
		if got := srv.Stats().Handoffs; got != after {
			t.Fatalf("round %d: %d hand-off rounds ran after Close", i, got-after)
		}
	}
}
