package replica_test

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/transport"
)

// Datagrams really travel over AF_PACKET in the pkt modes and interoperate
// with kernel UDP and AF_XDP: the server and the mirror name their
// transports; the AF_PACKET ends count the frames their rings moved.
func TestAFPacketCarriesDatagrams(t *testing.T) {
	modes := append(append([]string{}, pktModes...), pktMixedModes...)
	eachMode(t, modes, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		src := newSource(t, p.A, p.AAddr, 8192)
		scfg, mcfg := transportConfigs(mode)
		so, mo := watch[*transport.AFPacket](&scfg, &mcfg)
		srv := src.serve(scfg)
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		src.pushPaced(2000, 50, 200*time.Microsecond)
		mr.waitFor(2000, 10*time.Second)
		ms, ss := mr.m.Stats(), srv.Stats()
		srcKind, mirKind, _ := ends(mode)
		if ss.Transport != srcKind {
			t.Fatalf("server transport %q, want %q", ss.Transport, srcKind)
		}
		if srcKind == "afpacket" {
			st, err := so.last(t).Stats()
			if err != nil || st.Sent == 0 || st.Socket.TXFrames < st.Sent {
				t.Fatalf("server AF_PACKET sent nothing: %+v, %v", st, err)
			}
		}
		if mirKind == "afpacket" {
			st, err := mo.last(t).Stats()
			if err != nil || st.Received == 0 || st.Socket.RXFrames < st.Received || st.Malformed+st.Stray != 0 {
				t.Fatalf("mirror AF_PACKET received nothing: %+v, %v", st, err)
			}
		}
		want := transportLabel(mode)
		if ms.Datagrams == 0 || ms.Transport != want {
			t.Fatalf("mirror %+v: want datagrams over %q", ms, want)
		}
		wantAll(t, ms, 2000, want)
	})
}
