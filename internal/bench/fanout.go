package bench

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// FanoutTransports are the transports the fan-out measures.
var FanoutTransports = []string{"udp-unicast", "udp-multicast", "afpacket-unicast", "xdp-unicast", "xdp-multicast"}

// fanout serves one source to n mirrors over tr, each mirror on a host of
// its own (n+1 namespaces on a bridge): the push-to-read latency at each
// mirror, and the producer's Push cost with the mirrors attached against a
// ring nobody serves.
func (r *rig) fanout(tr string, n, size int, d time.Duration) (report.Fanout, error) {
	defer r.reset()
	var hosts netns.Owner
	r.stops = append(r.stops, func() { hosts.Close() }) // runs last
	lan, err := hosts.NewLAN(n + 1)
	if err != nil {
		return report.Fanout{}, err
	}
	src, err := r.newSource(lan.Hosts[0], lan.Addrs[0], "F", size, 1<<16, tr, 0, nil)
	if err != nil {
		return report.Fanout{}, err
	}
	readers := make([]*shm.Reader, n)
	for i := range n {
		m, err := r.newMirror(lan.Hosts[i+1], lan.Addrs[i+1], src, fmt.Sprintf("F-mirror-%d", i), tr, 0, nil)
		if err != nil {
			return report.Fanout{}, err
		}
		readers[i] = m.rd
	}
	hs, err := r.measure(src, readers, d, stageRate)
	if err != nil {
		return report.Fanout{}, err
	}
	f := report.Fanout{Transport: tr, Mirrors: n}
	for _, h := range hs {
		f.PerMirror = append(f.PerMirror, h.Percentiles())
	}
	f.BaseNs, f.PushNs, err = r.pushCosts(src, size)
	return f, err
}

// pushCosts is the producer's time per Push, pushing 100,000 records back
// to back: into a ring nobody serves (base) and into src's ring, served to
// its mirrors (served). Rounds alternate between the two, so that a change
// of the machine's load weighs on both; each is the median of 7 rounds.
func (r *rig) pushCosts(src *source, size int) (base, served float64, err error) {
	w, err := shm.Create(r.dir+"/unserved", shm.RingConfig{PayloadSize: size, Capacity: 1 << 16}, shm.CreateOptions{Replace: true})
	if err != nil {
		return 0, 0, err
	}
	defer w.Close()
	unserved := &source{w: w, rec: make([]byte, size)}
	var bs, ss []float64
	for range 7 {
		for _, c := range []struct {
			s   *source
			out *[]float64
		}{{unserved, &bs}, {src, &ss}} {
			ns, err := pushRound(c.s)
			if err != nil {
				return 0, 0, err
			}
			*c.out = append(*c.out, ns)
		}
		time.Sleep(20 * time.Millisecond) // the senders catch up between rounds
	}
	return median(bs), median(ss), nil
}

// pushRound is the time per Push of 100,000 records pushed back to back.
func pushRound(s *source) (float64, error) {
	const n = 100_000
	start := time.Now()
	for range n {
		if _, err := s.w.Push(s.rec); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Nanoseconds()) / n, nil
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// sendCost compares one sendmmsg to n destinations with n sendto calls
// from host A to n UDP sockets on host B.
func (r *rig) sendCost(n, size int, d time.Duration) (report.SendCost, error) {
	defer r.reset()
	p := r.pair
	dests := make([]netip.AddrPort, n)
	for i := range n {
		var c *net.UDPConn
		if err := p.B.Do(func() (err error) {
			c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.BAddr, 0)))
			return err
		}); err != nil {
			return report.SendCost{}, err
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
		return report.SendCost{}, err
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
		return report.SendCost{}, fmt.Errorf("bench: send cost: %v, %v", batch.err, each.err)
	}
	return report.SendCost{Mirrors: n, SendmmsgNs: batch.ns / float64(n), SendtoNs: each.ns / float64(n)}, nil
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
