package replica_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/transport"
	"github.com/ringfire/ringfire/replica"
)

// packets remembers the AF_PACKET transports a test's factories opened.
type packets struct {
	mu  sync.Mutex
	all []*transport.AFPacket
}

func (o *packets) keep(t replica.Transport, err error) (replica.Transport, error) {
	if x, ok := t.(*transport.AFPacket); ok {
		o.mu.Lock()
		o.all = append(o.all, x)
		o.mu.Unlock()
	}
	return t, err
}

func (o *packets) last(t *testing.T) *transport.AFPacket {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.all) == 0 {
		t.Fatal("no AF_PACKET transport was opened")
	}
	return o.all[len(o.all)-1]
}

// Datagrams really travel over AF_PACKET in the pkt modes and interoperate
// with kernel UDP and AF_XDP: the server and the mirror name their
// transports; the AF_PACKET ends count the frames their rings moved.
func TestAFPacketCarriesDatagrams(t *testing.T) {
	modes := append(append([]string{}, pktModes...), pktMixedModes...)
	eachMode(t, modes, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		src := newSource(t, p.A, p.AAddr, 8192)
		scfg, mcfg := transportConfigs(mode)
		so, mo := &packets{}, &packets{}
		if open := scfg.NewTransport; open != nil {
			scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) { return so.keep(open(u)) }
		}
		if open := mcfg.NewTransport; open != nil {
			mcfg.NewTransport = func(s replica.DatagramSpec) (replica.Transport, error) { return mo.keep(open(s)) }
		}
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
