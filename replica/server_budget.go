package replica

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// The repair budget. What a source sends a mirror besides live data, NAK
// answers and a session's catch-up (the records the ring held when the
// session began), is paced by two token buckets of bytes: one for the
// peer's address, one for every peer together (ServerConfig.RepairRate,
// RepairBurst, RepairAddrRate, RepairAddrBurst). Without them a peer that
// connects, asks for 65,535 records and hangs up draws them again at every
// connection: the whole uplink, for a few hundred bytes sent. Live data
// (datagrams, and a TCP-only mirror's records written after its session
// began) is never paced.
//
// A bucket holds one full catch-up of the ring by default, so that a real
// mirror starting from oldest is sent the whole ring at once, as fast as
// TCP goes; the rates bound what follows. A NAK answer waits for its
// tokens (the mirror sees it late, paced) unless the wait would pass
// repairQueue: the rest of that NAK is then left unanswered (NaksRefused)
// and the mirror's repeat, every NakRepeat while the hole stays, asks
// again. It never sees a GAP for records the ring still holds.
const (
	// DefaultRepairRate is 24 MiB/s (201 Mbit/s), a fifth of a 1 Gbit/s
	// uplink: repair running flat out leaves four fifths to live data.
	DefaultRepairRate = 24 << 20
	// DefaultRepairAddrRate is 6 MiB/s (50 Mbit/s) per peer address: it
	// takes four addresses to use the whole budget, and it is the repair
	// of a mirror losing 1% of a 5 Gbit/s stream.
	DefaultRepairAddrRate = 6 << 20
	// repairQueue is the longest a session waits for the budget before it
	// leaves a NAK for the mirror's repeat (the writer: before it sends a
	// heartbeat and tries again).
	repairQueue = 100 * time.Millisecond
	// repairAddrsMax bounds the buckets kept: past it, new addresses share
	// one bucket.
	repairAddrsMax = 1 << 16
)

// errRepairLater: the budget could not pay for the next frame within
// repairQueue; what was sent before it is flushed.
var errRepairLater = errors.New("replica: repair budget spent: later")

// repairBudget is a server's repair budget and its counters, configured
// by NewServer (init) before any goroutine uses it; then read-only but
// for the buckets (under mu) and the counters.
type repairBudget struct {
	total     *rate.Limiter // nil: no total limit
	addrRate  rate.Limit    // 0: no per-address limit
	addrBurst int
	frameMax  int // the largest frame sendRange writes but a lone blob's: the smallest burst

	mu      sync.Mutex
	addrs   map[netip.Addr]*addrBucket
	sweepAt int

	// Counters, Added by the sessions' goroutines, Loaded by Stats; they
	// publish nothing but their count.
	bytes, catchUpBytes            atomic.Uint64
	naksDeferred, naksDeferredAddr atomic.Uint64
	naksRefused, naksRefusedAddr   atomic.Uint64
	catchUpWaits, catchUpWaitsAddr atomic.Uint64
}

// addrBucket is one peer address's bucket (an IPv6 peer's /64).
type addrBucket struct {
	lim  *rate.Limiter
	refs int // pacers holding it (under repairBudget.mu)
}

// ErrConfig: a ServerConfig field holds a value it cannot take; the
// error names the field.
var ErrConfig = errors.New("replica: invalid configuration")

// checkRepair checks the budget's fields of cfg (NewServer): a burst is
// 0 (one full catch-up) or a count of bytes, never negative.
func checkRepair(cfg *ServerConfig) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"RepairBurst", cfg.RepairBurst}, {"RepairAddrBurst", cfg.RepairAddrBurst}} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s %d: want 0 (one full catch-up of the ring) or a count of bytes", ErrConfig, f.name, f.v)
		}
	}
	return nil
}

// init configures the budget from cfg, for a ring of layout l (NewServer).
func (b *repairBudget) init(cfg *ServerConfig, l shm.Layout) {
	whole := catchUpBytes(l)
	b.frameMax = tcpFrameMax + wire.HeaderSize
	if r, burst := budgetOf(cfg.RepairRate, DefaultRepairRate, cfg.RepairBurst, whole, b.frameMax); r > 0 {
		b.total = rate.NewLimiter(r, burst)
	}
	b.addrRate, b.addrBurst = budgetOf(cfg.RepairAddrRate, DefaultRepairAddrRate, cfg.RepairAddrBurst, whole, b.frameMax)
	b.addrs, b.sweepAt = map[netip.Addr]*addrBucket{}, 64
}

// budgetOf resolves a configured rate and burst: rate 0 is def, negative
// none (0); burst ≤ 0 is whole, and at least one frame.
func budgetOf(r, def, burst, whole int64, frame int) (rate.Limit, int) {
	switch {
	case r < 0:
		return 0, 0
	case r == 0:
		r = def
	}
	if burst <= 0 {
		burst = whole
	}
	return rate.Limit(r), int(max(burst, int64(frame)))
}

// catchUpBytes is what one full catch-up of a ring with layout l sends
// over TCP: every slot's payload, the arena's bytes, a header per frame.
func catchUpBytes(l shm.Layout) int64 {
	payload := int64(wire.ShapeOf(wire.GeometryOf(l)).Payload)
	data := int64(l.Capacity)*payload + int64(l.ArenaSize)
	frames := data/(tcpFrameMax-payload) + 1
	return data + frames*wire.HeaderSize
}

// repairKey is the bucket's key of a peer: its address, an IPv6 peer's /64.
func repairKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// pacer takes one session goroutine's repair from the budget. A nil pacer
// paces nothing: a Unix socket's peer (it is on this host: no uplink), or
// a budget without limits.
type pacer struct {
	b       *repairBudget
	key     netip.Addr
	addr    *rate.Limiter // nil: no per-address limit
	catchUp bool          // the writer's catch-up, not NAK answers
	wait    func(time.Duration)
	// What the budget did to the NAK under way (the reader's).
	waited, waitedAddr, refused, refusedAddr bool
}

// repairPacer returns a pacer for a session with peer; wait sleeps the
// goroutine (cut short when its session or the server ends). Release it.
func (s *Server) repairPacer(peer netip.Addr, catchUp bool, wait func(time.Duration)) *pacer {
	b := &s.st.repair
	if !peer.IsValid() || b.total == nil && b.addrRate == 0 {
		return nil
	}
	p := &pacer{b: b, catchUp: catchUp, wait: wait}
	if b.addrRate > 0 {
		p.key, p.addr = b.hold(repairKey(peer))
	}
	return p
}

// hold returns key's bucket, made if new, and counts the holder.
func (b *repairBudget) hold(key netip.Addr) (netip.Addr, *rate.Limiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.addrs[key]
	if a == nil {
		if len(b.addrs) >= b.sweepAt {
			b.sweep(time.Now())
		}
		if len(b.addrs) >= repairAddrsMax {
			key = netip.IPv6Unspecified() // the overflow's bucket
			a = b.addrs[key]
		}
	}
	if a == nil {
		a = &addrBucket{lim: rate.NewLimiter(b.addrRate, b.addrBurst)}
		b.addrs[key] = a
	}
	a.refs++
	return key, a.lim
}

// sweep forgets the buckets nobody holds that are full again (under mu):
// a fresh bucket would be the same.
func (b *repairBudget) sweep(now time.Time) {
	for k, a := range b.addrs {
		if a.refs == 0 && a.lim.TokensAt(now) >= float64(b.addrBurst) {
			delete(b.addrs, k)
		}
	}
	b.sweepAt = max(64, 2*len(b.addrs))
}

// release gives the pacer's bucket back (nil-safe). A bucket still short
// of tokens is kept, so that a peer cannot get a full one by reconnecting.
func (p *pacer) release() {
	if p == nil || p.addr == nil {
		return
	}
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.addrs[p.key]
	if a.refs--; a.refs == 0 && a.lim.Tokens() >= float64(b.addrBurst) {
		delete(b.addrs, p.key)
	}
}

// take waits until the budget pays for a frame of n bytes, and says
// false, taking nothing, when that would be longer than repairQueue.
func (p *pacer) take(n int) bool {
	if p == nil {
		return true
	}
	now := time.Now()
	var d, dAddr time.Duration
	var ra, rt *rate.Reservation
	// A frame larger than a bucket (a lone blob) takes all of it.
	if p.addr != nil {
		ra = p.addr.ReserveN(now, min(n, p.b.addrBurst))
		dAddr = ra.DelayFrom(now)
	}
	if p.b.total != nil {
		rt = p.b.total.ReserveN(now, min(n, p.b.total.Burst()))
		d = rt.DelayFrom(now)
	}
	byAddr := dAddr >= d
	d = max(d, dAddr)
	if d > repairQueue {
		for _, r := range []*rate.Reservation{ra, rt} {
			if r != nil {
				r.CancelAt(now)
			}
		}
		p.note(false, byAddr)
		return false
	}
	if d > 0 {
		p.note(true, byAddr)
		p.wait(d)
	}
	return true
}

// note counts a wait (or a refusal) of the budget, by the bucket that
// decided it: a catch-up's at once, a NAK's at its end (endNak).
func (p *pacer) note(waited, byAddr bool) {
	b := p.b
	switch {
	case p.catchUp:
		b.catchUpWaits.Add(1)
		if byAddr {
			b.catchUpWaitsAddr.Add(1)
		}
	case waited:
		p.waited, p.waitedAddr = true, p.waitedAddr || byAddr
	default:
		p.refused, p.refusedAddr = true, p.refusedAddr || byAddr
	}
}

// sent counts n bytes of repair sent (nil-safe).
func (p *pacer) sent(n int) {
	if p == nil {
		return
	}
	p.b.bytes.Add(uint64(n))
	if p.catchUp {
		p.b.catchUpBytes.Add(uint64(n))
	}
}

// endNak counts what the budget did to the NAK just answered (nil-safe).
func (p *pacer) endNak() {
	if p == nil {
		return
	}
	b := p.b
	for _, c := range []struct {
		did, byAddr      bool
		count, countAddr *atomic.Uint64
	}{{p.waited, p.waitedAddr, &b.naksDeferred, &b.naksDeferredAddr}, {p.refused, p.refusedAddr, &b.naksRefused, &b.naksRefusedAddr}} {
		if c.did {
			c.count.Add(1)
			if c.byAddr {
				c.countAddr.Add(1)
			}
		}
	}
	p.waited, p.waitedAddr, p.refused, p.refusedAddr = false, false, false, false
}

// stats returns the budget's counters and settings.
func (b *repairBudget) stats() RepairStats {
	b.mu.Lock()
	n := len(b.addrs)
	b.mu.Unlock()
	st := RepairStats{Bytes: b.bytes.Load(), CatchUpBytes: b.catchUpBytes.Load(),
		NaksDeferred: b.naksDeferred.Load(), NaksDeferredByAddr: b.naksDeferredAddr.Load(),
		NaksRefused: b.naksRefused.Load(), NaksRefusedByAddr: b.naksRefusedAddr.Load(),
		CatchUpWaits: b.catchUpWaits.Load(), CatchUpWaitsByAddr: b.catchUpWaitsAddr.Load(),
		Addresses: n, AddrRate: float64(b.addrRate), AddrBurst: int64(b.addrBurst)}
	if b.total != nil {
		st.Rate, st.Burst = float64(b.total.Limit()), int64(b.total.Burst())
	}
	return st
}
