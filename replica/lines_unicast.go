package replica

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// A unicast line B (A/B feeds to mirrors that punch): a source with
// UDPPort and IfaceB takes PUNCHes on IfaceB:UDPPort through line B's
// transport too. A unicast mirror that announced HelloLines is told, in
// line B's MULTICAST, that address and a punch key (64 random bits, the
// header's seq); its line B PUNCH (count PunchLineB) carries the key, and
// the source sends every datagram it sends to the mirror's line A address
// to the address that PUNCH came from as well, through line B's
// transport. The key ties line B to the TCP session, since line B's
// address is not the session's peer: a line B PUNCH without the key of a
// live session is counted (BadPunches, LineSendStats.BadPunches) and
// changes nothing; under a key it is sealed as line A's is. Line A's
// PUNCH starts the datagrams (the catch-up's end): line B's copies follow
// line A's destination.

// lineUni is a source's unicast line B: the punch keys of the sessions it
// told about it, and where their copies go.
type lineUni struct {
	addr netip.AddrPort // where mirrors punch on line B (IfaceB, line B's port)
	mu   sync.Mutex     // guards keys
	keys map[uint64]*lineSession
	// routes maps a mirror's line A address to its line B address, for
	// the sender: published by routeLines (under the server's mu).
	routes atomic.Pointer[map[netip.AddrPort]netip.AddrPort]
	bad    atomic.Uint64 // line B PUNCHes refused
}

// lineSession is one session's unicast line B.
type lineSession struct {
	ss  *session
	key [8]byte
	to  atomic.Pointer[netip.AddrPort] // the mirror's line B address, once it punched
}

func newLineUni(addr netip.AddrPort) *lineUni {
	u := &lineUni{addr: addr, keys: map[uint64]*lineSession{}}
	u.routes.Store(&map[netip.AddrPort]netip.AddrPort{})
	return u
}

// add gives ss a fresh punch key (crypto/rand, never 0, unique).
func (u *lineUni) add(ss *session) uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	for {
		var b [8]byte
		rand.Read(b[:])
		k := binary.LittleEndian.Uint64(b[:])
		if k != 0 && u.keys[k] == nil {
			u.keys[k] = &lineSession{ss: ss, key: b}
			return k
		}
	}
}

// lookup is the line B of the session whose key is k (nil: none).
func (u *lineUni) lookup(k uint64) *lineSession {
	u.mu.Lock()
	ls := u.keys[k]
	u.mu.Unlock()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], k)
	if ls == nil || subtle.ConstantTimeCompare(ls.key[:], b[:]) != 1 {
		return nil
	}
	return ls
}

// lineUnicast is line B's MULTICAST for a unicast mirror (mc, its line A,
// Token its session's token) that announced HelloLines, and false when
// the source has no unicast line B.
func (s *Server) lineUnicast(mc wire.Multicast) (wire.Multicast, bool) {
	l, _ := s.udp.(*lineSender)
	if l == nil || l.uni == nil {
		return wire.Multicast{}, false
	}
	s.mu.Lock()
	ss := s.sessions[mc.Token]
	s.mu.Unlock()
	if ss == nil {
		return wire.Multicast{}, false
	}
	a := l.uni.addr.Addr().As4()
	mc.Port, mc.Token = l.uni.addr.Port(), binary.BigEndian.Uint32(a[:])
	mc.Key = l.uni.add(ss)
	return mc, true
}

// routeLines publishes where the copies of each punched session's
// datagrams go on line B, and forgets the keys of ended sessions. Called
// by rebuildDests with s.mu held.
func (s *Server) routeLines() {
	l, _ := s.udp.(*lineSender)
	if l == nil || l.uni == nil {
		return
	}
	u := l.uni
	r := map[netip.AddrPort]netip.AddrPort{}
	u.mu.Lock()
	for k, ls := range u.keys {
		if s.sessions[ls.ss.token] != ls.ss {
			delete(u.keys, k)
			continue
		}
		a, b := ls.ss.punched.Load(), ls.to.Load()
		if a != nil && b != nil {
			r[*a] = *b
		}
	}
	u.mu.Unlock()
	u.routes.Store(&r)
}

// punchLineB handles a datagram received on a unicast line B: a line B
// PUNCH with the key of a live session (sealed, under a key) sets where
// that session's line B copies go; anything else is counted and changes
// nothing.
func (s *Server) punchLineB(u *lineUni, b []byte, from netip.AddrPort) {
	bad := func() {
		s.st.badPunch.Add(1)
		u.bad.Add(1)
	}
	if len(b) != wire.HeaderSize+s.overhead(false) {
		bad()
		return
	}
	sess, key, err := wire.ParseLinePunch(b[:wire.HeaderSize])
	if err != nil || sess != s.session {
		bad()
		return
	}
	ls := u.lookup(key)
	if ls == nil {
		bad() // a stale key, or a guess
		return
	}
	ss := ls.ss
	s.mu.Lock()
	live := s.sessions[ss.token] == ss
	s.mu.Unlock()
	if !live || !ss.unicast.Load() {
		bad()
		return
	}
	if s.keyed != nil {
		if _, err := ss.punchOpen.Open(b); err != nil {
			bad() // forged, or replayed
			return
		}
	}
	if old := ls.to.Load(); old != nil && *old == from {
		return
	}
	ls.to.Store(&from)
	s.rebuildDests()
}

// recvPunches receives one batch of datagrams on each line: line A's
// into the first half of ms, line B's into the second, and returns them.
// When neither line has any and wait is not 0, it waits on one line (in
// turn) up to half of wait, then polls the other. A line that fails is
// counted (failed); its error is returned only when both fail, or when
// line A is closed.
func (l *lineSender) recvPunches(ms []Message, wait time.Duration, failed func()) (a, b []Message, err error) {
	half := len(ms) / 2
	into := [2][]Message{ms[:half], ms[half:]}
	var n [2]int
	var errs [2]error
	recv := func(i int, w time.Duration) {
		k, err := [2]Transport{l.a, l.b}[i].RecvBatch(into[i], w)
		if err != nil {
			errs[i] = err
			if !errors.Is(err, ErrClosed) {
				failed()
			}
			return
		}
		n[i] = k
	}
	recv(0, 0)
	recv(1, 0)
	if n[0]+n[1] == 0 && wait != 0 && (errs[0] == nil || errs[1] == nil) {
		l.turn ^= 1
		i := l.turn
		if errs[i] != nil {
			i ^= 1 // wait on the line that works
		}
		recv(i, wait/2)
		if errs[i^1] == nil {
			recv(i^1, 0)
		}
	}
	switch {
	case errors.Is(errs[0], ErrClosed):
		return nil, nil, errs[0]
	case errs[0] != nil && errs[1] != nil:
		return nil, nil, errs[0]
	}
	return into[0][:n[0]], into[1][:n[1]], nil
}
