package bench

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/transport"
)

// datagramPath is the transport-only round trip measured beside a ring
// transport's ping-pong ("" for none: multicast and TCP share the unicast
// and kernel paths).
func datagramPath(tr string) string {
	switch base, _ := splitKey(tr); base {
	case "udp-unicast", "xdp-unicast", "afpacket-unicast":
		return tr
	}
	return ""
}

// datagramRoundTrip times one datagram from host A to an echo on host B
// and back, through the transport alone (no ring, no protocol): what the
// transport contributes to a replication hop. Both ends block in
// RecvBatch.
func (r *rig) datagramRoundTrip(tr string, size int, d time.Duration) (report.Latency, error) {
	defer r.reset()
	p := r.pair
	base, keyMode := splitKey(tr)
	a, err := r.openDatagram(base, p.A, p.AAddr)
	if err != nil {
		return report.Latency{}, err
	}
	b, err := r.openDatagram(base, p.B, p.BAddr)
	if err != nil {
		return report.Latency{}, err
	}
	ab, ba := newSealPairs(keyMode) // with a key mode, each end seals what it sends and opens what it gets
	stop := make(chan struct{})
	done := make(chan struct{})
	go echo(b, stop, done, ab, ba)
	r.stops = append(r.stops, func() { close(stop); <-done })
	frame := make([]byte, max(size, 16), max(size, 16)+auth.Overhead)
	out := []replica.Message{{Addr: b.LocalAddr()}}
	in := []replica.Message{{Buf: make([]byte, 2048)}}
	rt := func() (time.Duration, error) {
		start := time.Now()
		out[0].Buf = frame
		if ab != nil {
			out[0].Buf = ab.seal.Seal(frame)
		}
		if _, err := a.SendBatch(out); err != nil {
			return 0, err
		}
		for deadline := start.Add(time.Second); time.Now().Before(deadline); {
			n, err := a.RecvBatch(in, 100*time.Millisecond)
			if err != nil {
				return 0, err
			}
			if n == 1 {
				if ba != nil {
					if _, err := ba.open.Open(in[0].Buf[:in[0].N]); err != nil {
						return 0, err
					}
				}
				return time.Since(start), nil
			}
		}
		return 0, fmt.Errorf("bench: no echo over %s within 1 s", tr)
	}
	h := hist.New()
	var end time.Time
	for i := 0; end.IsZero() || time.Now().Before(end); i++ {
		v, err := rt()
		if err != nil {
			return report.Latency{}, err
		}
		if i == 200 { // warmed up: next hops, caches
			end = time.Now().Add(d)
		} else if i > 200 {
			h.Record(v)
		}
	}
	return report.Latency{Name: tr, Lat: h.Percentiles()}, nil
}

// echo sends every datagram t receives back to its sender until stop
// (opened with in and sealed again with out, when keyed).
func echo(t replica.Transport, stop, done chan struct{}, in, out *sealPair) {
	defer close(done)
	ms := []replica.Message{{Buf: make([]byte, 2048)}}
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := t.RecvBatch(ms, 50*time.Millisecond)
		if err != nil {
			return
		}
		if n != 1 {
			continue
		}
		b := ms[0].Buf[:ms[0].N]
		if in != nil {
			f, err := in.open.Open(b)
			if err != nil {
				continue
			}
			b = out.seal.Seal(f)
		}
		t.SendBatch([]replica.Message{{Buf: b, Addr: ms[0].Addr}})
	}
}

// openDatagram opens tr's datagram transport on a free port in ns.
func (r *rig) openDatagram(tr string, ns *netns.NS, addr netip.Addr) (replica.Transport, error) {
	var t replica.Transport
	err := ns.Do(func() (err error) {
		bind := netip.AddrPortFrom(addr, 0)
		switch tr {
		case "xdp-unicast":
			t, err = openXDP(transport.XDPConfig{Iface: iface, Bind: bind})
			return err
		case "afpacket-unicast":
			t, err = openPacket(transport.AFPacketConfig{Iface: iface, Bind: bind})
			return err
		}
		u, err := replica.NewUDP(replica.UDPConfig{Bind: bind, SocketBuffer: 4 << 20})
		if err == nil {
			t = u
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	r.stops = append(r.stops, func() { t.Close() })
	return t, nil
}
