package replica_test

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// A source with a datagram transport but no mirror taking datagrams (here
// one TCP-only mirror) owes no heartbeat: its sender waits for the ring
// between records (as long as an idle heartbeat's interval, up to 128 ms).
// A sender that took its heartbeat deadline as always past (no datagram
// ever sent) would poll the ring without waiting: an idle `ringfire serve
// --udp` with no mirror would burn a whole core.
func TestSenderWithoutDatagramMirrorsWaits(t *testing.T) {
	p, src := pairSource(t, 1024)
	scfg, _ := transportConfigs("unicast")
	_, mcfg := transportConfigs("tcp")
	srv := src.serve(scfg)
	mcfg.From = fromOldest
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	src.push(10)
	mr.waitFor(10, 10*time.Second)
	w0 := srv.Stats().SenderWaits
	waitUntil(t, 10*time.Second, "the idle sender to wait for the ring", func() bool {
		return srv.Stats().SenderWaits > w0+2
	})
	src.push(10)
	wantAll(t, mr.waitFor(20, 10*time.Second), 20, "")
}

// A sender that keeps finding records without waiting yields its CPU once
// every idle.BusyYieldEvery of that in the yielding modes (adaptive,
// yield), and never in block: records pushed without pause keep a
// multicast sender busy (bursts of 20,000, each fully mirrored before the
// next).
func TestSenderBusyYields(t *testing.T) {
	for _, mode := range []replica.WaitMode{replica.WaitAdaptive, replica.WaitYield, replica.WaitBlock} {
		t.Run(mode.String(), func(t *testing.T) {
			p, src := pairSource(t, 1<<16)
			scfg, mcfg := transportConfigs("multicast")
			scfg.Wait = mode
			srv := src.serve(scfg)
			mcfg.From = fromOldest
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			pushed := 0
			for pushed < 1_000_000 && srv.Stats().SenderBusyYields == 0 { // bursts the ring holds
				src.push(20_000)
				pushed += 20_000
				wantAll(t, mr.waitFor(uint64(pushed), 20*time.Second), uint64(pushed), "")
				if mode == replica.WaitBlock && pushed >= 200_000 {
					break
				}
			}
			got := srv.Stats().SenderBusyYields
			switch {
			case mode == replica.WaitBlock && got != 0:
				t.Errorf("a blocking sender yielded %d times for work", got)
			case mode != replica.WaitBlock && got == 0:
				t.Errorf("no busy yield in %d records pushed without pause", pushed)
			}
		})
	}
}
