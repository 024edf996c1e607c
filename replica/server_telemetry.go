package replica

import (
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// DefaultMirrorRetention is how long a mirror that left stays in the
// table.
const DefaultMirrorRetention = 10 * time.Minute

// DefaultMirrorRows is how many mirrors that left the table keeps at most.
const DefaultMirrorRows = 256

// MirrorInfo is one row of a source's table of mirrors (Server.Mirrors).
//
// Lag is measured against the source ring, from where the mirror's
// connection started: a mirror owes only the records from Start on, so
// one that joined from latest is not behind by the records written before
// it. LagRecords is the ring's write_seq minus the later of Applied and
// Start−1; Lag is the age of the oldest record the mirror owes and has
// not applied: how long ago the source first saw a write_seq beyond it
// (its clock, sampled every 10 ms; 0 when the mirror is caught up). Both
// are taken when a STATUS arrives; once a mirror's STATUS is older than
// five of its intervals (it stopped, hung or left), they are taken at the
// time of the call, so the lag of a silent mirror keeps growing.
type MirrorInfo struct {
	ID        uint64         // the mirror's identity (0: it has not reported)
	Name      string         // the mirror's name, from its STATUS
	Addr      netip.AddrPort // its TCP address (the last one once it left)
	Transport string         // the mirror's word once it reported, else the source's
	Connected bool           // false: it left; the row is kept for ServerConfig.MirrorRetention
	Telemetry bool           // it reports STATUS (HelloTelemetry acknowledged)
	Reported  bool           // a STATUS arrived: the fields below are meaningful

	Applied    uint64        // last sequence published (readable) in the mirror ring
	Start      uint64        // first sequence this connection served (the HELLO's start resolved)
	LagRecords uint64        // source write_seq − max(Applied, Start−1)
	Lag        time.Duration // age of the oldest record owed and not applied
	MirrorLag  uint64        // the mirror's own view: records behind the newest it heard of

	Naks          uint64 // NAKs the mirror sent (since it started)
	Retransmitted uint64 // records it received in answer to NAKs
	Gaps          uint64 // records it lost (the source no longer held them)
	Drops         uint64 // datagrams it could not use (overflow, malformed, other session)
	// Lines are the mirror's two lines (A, B) as its STATUS reported them
	// (mirror_status.go), once its source told it line B's group; Name ""
	// in both: it reported none.
	Lines [2]LineStats

	Since      time.Time // when this connection was accepted
	LastStatus time.Time // when the last STATUS arrived (zero: none)
	Lagging    bool      // past half the ring's capacity (EventLagging raised)
}

// mirrorRow is the table's state of one mirror.
type mirrorRow struct {
	ss       *session // nil once the mirror left
	info     MirrorInfo
	interval time.Duration // the mirror's STATUS interval
	left     time.Time     // when it left
	// said is the transport the mirror's last STATUS said (info.Transport
	// may be it made whole: linesTransport).
	said string
}

// telemetry is a source's table of mirrors, with the sampled history of
// its ring's write_seq that dates records for the lag in time.
type telemetry struct {
	mu   sync.Mutex
	rows []*mirrorRow
	// changed is closed and replaced on a change once an AwaitApplied has
	// taken it (taken): a STATUS nobody waits for allocates nothing.
	changed chan struct{}
	taken   bool
	closed  bool
	index   seqIndex
	half    uint64 // lag beyond this raises EventLagging
	quarter uint64 // lag back to this raises EventLagRecovered
	keepers int    // most rows of mirrors that left (ServerConfig.MirrorRows)
}

func newTelemetry(capacity uint64, w uint64, now time.Time, keepers int) *telemetry {
	t := &telemetry{changed: make(chan struct{}), half: capacity / 2, quarter: capacity / 4, keepers: keepers}
	t.index.add(w, now)
	return t
}

// broadcast wakes every AwaitApplied (t.mu held).
func (t *telemetry) broadcast() {
	if !t.taken {
		return
	}
	close(t.changed)
	t.changed, t.taken = make(chan struct{}), false
}

// wakeAwaits wakes every AwaitApplied: a count may have changed without
// a STATUS (a session went live).
func (t *telemetry) wakeAwaits() {
	t.mu.Lock()
	t.broadcast()
	t.mu.Unlock()
}

// awaitChange is the channel the next change closes (t.mu held).
func (t *telemetry) awaitChange() <-chan struct{} {
	t.taken = true
	return t.changed
}

// join adds a mirror that completed its handshake.
func (t *telemetry) join(ss *session, now time.Time) {
	r := &mirrorRow{ss: ss, info: MirrorInfo{Connected: true, Telemetry: ss.telemetry, Since: now, Start: ss.start}}
	if a, ok := ss.tcp.RemoteAddr().(interface{ AddrPort() netip.AddrPort }); ok {
		r.info.Addr = a.AddrPort()
	}
	t.mu.Lock()
	ss.row = r
	t.rows = append(t.rows, r)
	t.broadcast()
	t.mu.Unlock()
}

// leave marks a mirror gone. A mirror that reported an identity stays in
// the table (its lag keeps growing) unless another connection of it is
// there, or no retention is asked for.
func (t *telemetry) leave(ss *session, now time.Time, keep bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := ss.row
	if r == nil {
		return
	}
	r.info.Transport = t.transportOf(r)
	r.ss, r.info.Connected, r.left = nil, false, now
	if !keep || r.info.ID == 0 || t.connectedID(r.info.ID) {
		t.remove(r)
	}
	t.trimLeft()
	t.broadcast()
}

// trimLeft forgets the mirrors that left longest ago beyond t.keepers
// (t.mu held): short connections that each report an identity cannot grow
// the table without bound.
func (t *telemetry) trimLeft() {
	n := 0
	for _, r := range t.rows {
		if r.ss == nil {
			n++
		}
	}
	for ; n > t.keepers; n-- {
		var oldest *mirrorRow
		for _, r := range t.rows {
			if r.ss == nil && (oldest == nil || r.left.Before(oldest.left)) {
				oldest = r
			}
		}
		t.remove(oldest)
	}
}

// status records a STATUS from ss, taken at now while the ring's write_seq
// is w.
func (t *telemetry) status(ss *session, st wire.Status, w uint64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index.add(w, now)
	r := ss.row
	if r == nil {
		return
	}
	i := &r.info
	if st.ID != 0 && st.ID != i.ID {
		// A mirror coming back takes over the row it left behind.
		for _, old := range t.rows {
			if old.ss == nil && old.info.ID == st.ID {
				i.Lagging = i.Lagging || old.info.Lagging
				t.remove(old)
				break
			}
		}
	}
	if st.Transport != r.said || !i.Reported {
		r.said, i.Transport = st.Transport, linesTransport(st)
	}
	i.ID, i.Name, i.Reported = st.ID, st.Name, true
	i.Applied, i.MirrorLag = st.Applied, st.Lag
	i.Naks, i.Retransmitted, i.Gaps, i.Drops = st.Naks, st.Retransmitted, st.Gaps, st.Drops
	i.Lines = [2]LineStats{}
	if st.HasLines {
		i.Lines = reportedLines(st.Lines)
	}
	i.LastStatus, r.interval = now, st.Interval
	i.LagRecords, i.Lag = t.lagAt(i.lagBase(), w, now)
	t.broadcast()
}

// lagBase is the last record the mirror is not behind on: what it
// applied, or the record before its connection's first, whichever is
// later. A mirror reports Applied 0 until it has applied a record; counted
// from 0, one that joined from latest a ring far past half its capacity
// would be lagging at once (EventLagging) without being behind at all.
func (i *MirrorInfo) lagBase() uint64 {
	if i.Start == 0 {
		return i.Applied
	}
	return max(i.Applied, i.Start-1)
}

// lagAt is the lag of a mirror whose lag base is `applied`, at now, the
// ring's write_seq being w.
func (t *telemetry) lagAt(applied, w uint64, now time.Time) (uint64, time.Duration) {
	if applied >= w {
		return 0, 0
	}
	return w - applied, t.index.age(applied, now)
}

// infoOf is a row's MirrorInfo at now (t.mu held).
func (t *telemetry) infoOf(r *mirrorRow, w uint64, now time.Time) MirrorInfo {
	i := r.info
	if !i.Reported {
		i.Transport = t.transportOf(r)
		return i
	}
	if now.Sub(i.LastStatus) > 5*max(r.interval, time.Millisecond) {
		i.LagRecords, i.Lag = t.lagAt(i.lagBase(), w, now)
	}
	return i
}

// transportOf is the source's view of a row's transport (t.mu held).
func (t *telemetry) transportOf(r *mirrorRow) string {
	if r.ss == nil {
		return r.info.Transport
	}
	return r.ss.transportName()
}

func (t *telemetry) connectedID(id uint64) bool {
	for _, r := range t.rows {
		if r.ss != nil && r.info.ID == id {
			return true
		}
	}
	return false
}

func (t *telemetry) remove(r *mirrorRow) {
	for k, x := range t.rows {
		if x == r {
			t.rows = append(t.rows[:k], t.rows[k+1:]...)
			return
		}
	}
}

// snapshot returns every row at now, connected mirrors first, then by name
// and address.
func (t *telemetry) snapshot(w uint64, now time.Time) []MirrorInfo {
	t.mu.Lock()
	out := make([]MirrorInfo, 0, len(t.rows))
	for _, r := range t.rows {
		out = append(out, t.infoOf(r, w, now))
	}
	t.mu.Unlock()
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Connected != y.Connected {
			return x.Connected
		}
		if x.Name != y.Name {
			return x.Name < y.Name
		}
		return x.Addr.Compare(y.Addr) < 0
	})
	return out
}

// Mirrors returns the source's table of mirrors: every connected mirror,
// and those that reported an identity and left within
// ServerConfig.MirrorRetention (Connected false).
func (s *Server) Mirrors() []MirrorInfo {
	defer s.guardRing(guard()) // a scrape may come before the watcher saw a cut
	return s.tele.snapshot(s.ring.WriteSeq(), time.Now())
}

// transportName is the source's view of a session's transport.
func (ss *session) transportName() string {
	s := ss.srv
	if ss.mode.Load() == modeStream || s.udp == nil {
		return "tcp"
	}
	if ss.unicast.Load() {
		return TransportName(s.udp) + " unicast"
	}
	return TransportName(s.udp) + " multicast"
}

// Capacity is the served ring's capacity in records (a mirror whose lag
// passes half of it raises EventLagging).
func (s *Server) Capacity() uint64 { return s.ring.Layout().Capacity }
