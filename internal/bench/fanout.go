package bench

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// FanoutTransports are the transports the fan-out measures.
var FanoutTransports = []string{"udp-unicast", "udp-multicast", "xdp-unicast"}

// fanout serves one source to n mirrors on the other host over tr: the
// push-to-read latency at each mirror, and the producer's Push cost with
// the mirrors attached against a ring nobody serves.
func (r *rig) fanout(tr string, n, size int, d time.Duration) (Fanout, error) {
	defer r.reset()
	p := r.pair
	base, err := r.pushCost(nil, size)
	if err != nil {
		return Fanout{}, err
	}
	src, err := r.newSource(p.A, p.AAddr, "F", size, 1<<16, tr, 0, nil)
	if err != nil {
		return Fanout{}, err
	}
	readers := make([]*shm.Reader, n)
	for i := range n {
		m, err := r.newMirror(p.B, p.BAddr, src, fmt.Sprintf("F-mirror-%d", i), tr, 0)
		if err != nil {
			return Fanout{}, err
		}
		readers[i] = m.rd
	}
	hs, err := r.measure(src, readers, d)
	if err != nil {
		return Fanout{}, err
	}
	f := Fanout{Transport: tr, Mirrors: n, BaseNs: base}
	for _, h := range hs {
		f.PerMirror = append(f.PerMirror, h.percentiles())
	}
	f.PushNs, err = r.pushCost(src, size)
	return f, err
}

// pushCost is the median over 5 rounds of the time per Push of 100,000
// records pushed back to back, into src's ring or, for nil, into a ring
// nobody serves.
func (r *rig) pushCost(src *source, size int) (float64, error) {
	if src == nil {
		w, err := shm.Create(r.dir+"/unserved", shm.RingConfig{PayloadSize: size, Capacity: 1 << 16}, shm.CreateOptions{Replace: true})
		if err != nil {
			return 0, err
		}
		defer w.Close()
		src = &source{w: w, rec: make([]byte, size)}
	}
	const n = 100_000
	var rounds []float64
	for range 5 {
		start := time.Now()
		for range n {
			if _, err := src.w.Push(src.rec); err != nil {
				return 0, err
			}
		}
		rounds = append(rounds, float64(time.Since(start).Nanoseconds())/n)
		time.Sleep(20 * time.Millisecond) // let the senders catch up between rounds
	}
	slices.Sort(rounds)
	return rounds[len(rounds)/2], nil
}

// sendCost compares one sendmmsg to n destinations with n sendto calls
// from host A to n UDP sockets on host B.
func (r *rig) sendCost(n, size int, d time.Duration) (SendCost, error) {
	defer r.reset()
	p := r.pair
	dests := make([]netip.AddrPort, n)
	for i := range n {
		var c *net.UDPConn
		if err := p.B.Do(func() (err error) {
			c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.BAddr, 0)))
			return err
		}); err != nil {
			return SendCost{}, err
		}
		r.stops = append(r.stops, func() { c.Close() })
		dests[i] = c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	var mm *replica.UDP
	var one *net.UDPConn
	if err := p.A.Do(func() (err error) {
		if mm, err = replica.NewUDP(replica.UDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 0)}); err != nil {
			return err
		}
		one, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.AAddr, 0)))
		return err
	}); err != nil {
		return SendCost{}, err
	}
	r.stops = append(r.stops, func() { mm.Close(); one.Close() })
	payload := make([]byte, size)
	ms := make([]replica.Message, n)
	for i := range ms {
		ms[i] = replica.Message{Buf: payload, Addr: dests[i]}
	}
	batch := timed(d, func() error { _, err := mm.SendBatch(ms); return err })
	each := timed(d, func() error {
		for _, a := range dests {
			if _, err := one.WriteToUDPAddrPort(payload, a); err != nil {
				return err
			}
		}
		return nil
	})
	if batch.err != nil || each.err != nil {
		return SendCost{}, fmt.Errorf("bench: send cost: %v, %v", batch.err, each.err)
	}
	return SendCost{Mirrors: n, SendmmsgNs: batch.ns / float64(n), SendtoNs: each.ns / float64(n)}, nil
}

type timing struct {
	ns  float64 // per call of fn
	err error
}

// timed calls fn for d and returns the mean time per call.
func timed(d time.Duration, fn func() error) timing {
	start, calls := time.Now(), 0
	for time.Since(start) < d {
		for range 64 {
			if err := fn(); err != nil {
				return timing{err: err}
			}
			calls++
		}
	}
	return timing{ns: float64(time.Since(start).Nanoseconds()) / float64(calls)}
}
