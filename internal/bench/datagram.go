package bench

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// datagramPath is the transport-only round trip measured beside a ring
// transport's ping-pong ("" for none: multicast and TCP share the unicast
// and kernel paths).
func datagramPath(tr string) string {
	switch tr {
	case "udp-unicast", "xdp-unicast", "afpacket-unicast":
		return tr
	}
	return ""
}

// datagramRoundTrip times one datagram from host A to an echo on host B
// and back, through the transport alone (no ring, no protocol): what the
// transport contributes to a replication hop. Both ends block in
// RecvBatch.
func (r *rig) datagramRoundTrip(tr string, size int, d time.Duration) (Latency, error) {
	defer r.reset()
	p := r.pair
	a, err := r.openDatagram(tr, p.A, p.AAddr)
	if err != nil {
		return Latency{}, err
	}
	b, err := r.openDatagram(tr, p.B, p.BAddr)
	if err != nil {
		return Latency{}, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go echo(b, stop, done)
	r.stops = append(r.stops, func() { close(stop); <-done })
	out := []replica.Message{{Buf: make([]byte, size), Addr: b.LocalAddr()}}
	in := []replica.Message{{Buf: make([]byte, 2048)}}
	rt := func() (time.Duration, error) {
		start := time.Now()
		if _, err := a.SendBatch(out); err != nil {
			return 0, err
		}
		for deadline := start.Add(time.Second); time.Now().Before(deadline); {
			n, err := a.RecvBatch(in, 100*time.Millisecond)
			if err != nil {
				return 0, err
			}
			if n == 1 {
				return time.Since(start), nil
			}
		}
		return 0, fmt.Errorf("bench: no echo over %s within 1 s", tr)
	}
	h := newHist()
	var end time.Time
	for i := 0; end.IsZero() || time.Now().Before(end); i++ {
		v, err := rt()
		if err != nil {
			return Latency{}, err
		}
		if i == 200 { // warmed up: next hops, caches
			end = time.Now().Add(d)
		} else if i > 200 {
			h.record(v)
		}
	}
	return Latency{Name: tr, Lat: h.percentiles()}, nil
}

// echo sends every datagram t receives back to its sender until stop.
func echo(t replica.Transport, stop, done chan struct{}) {
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
		if n == 1 {
			t.SendBatch([]replica.Message{{Buf: ms[0].Buf[:ms[0].N], Addr: ms[0].Addr}})
		}
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
