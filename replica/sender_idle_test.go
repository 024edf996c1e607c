package replica_test

import (
	"testing"
	"time"
)

// A source with a datagram transport but no mirror taking datagrams (here
// one TCP-only mirror) owes no heartbeat: its sender waits for the ring
// between records (as long as an idle heartbeat's interval, up to 128 ms).
// It used to find its heartbeat deadline always past (no datagram ever
// sent) and spin on the ring without waiting: an idle `ringfire serve
// --udp` with no mirror burned a whole core.
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
