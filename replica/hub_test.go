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
		hsrc := &source{tb: t, ns: p.B, addr: p.BAddr, path: mid.path}
		srv := hsrc.serve(hcfg)
		t.Cleanup(hsrc.close)
		hub.Store(srv)
		lcfg.From = fromOldest
		leaf := startMirror(t, p.A, p.AAddr, hsrc, lcfg, nil)
		leaf.connected()
		waitDatagrams(t, mid, leaf)

		const n = 3000
		src.pushPaced(n, 50, time.Millisecond)
		mid.waitFor(n, 10*time.Second)
		leaf.waitFor(n, 10*time.Second)
		hst := srv.Stats()
		t.Logf("hub %+v", hst)
		if hst.Handoffs == 0 || hst.Records == 0 {
			t.Fatalf("the hub's records never left by hand-off: %+v", hst)
		}
		leaf.close()
		mid.close()
		sameSlots(t, src.path, leaf.path, 1)
		wantAll(t, leaf.m.Stats(), n, transportLabel(mode))
	})
}
