package replica

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
	"golang.org/x/sys/unix"
)

const (
	// udpHeartbeat is the interval of the first datagram heartbeat after
	// data: a mirror that lost the last datagram hears of it this soon.
	// Each heartbeat that follows without data doubles the interval, up
	// to udpHeartbeatIdle, so an idle source sends a few a second.
	udpHeartbeat     = time.Millisecond
	udpHeartbeatIdle = 128 * time.Millisecond
	// sendFrames is the most frames one batch (one sendmmsg per 64
	// datagrams) carries.
	sendFrames = 32
)

// sender reads the ring and sends DATA frames as datagrams to the
// multicast group and every punched unicast mirror: one batch call for all
// frames and all destinations. It paces frames (see ServerConfig.Linger)
// and sends heartbeats carrying the last sequence it actually sent.
type sender struct {
	s      *Server
	feed   *feed
	mtu    int
	frames [][]byte
	firsts []uint64 // first sequence of each frame
	count  uint64   // records in the frames built this round
	msgs   []Message
	next   uint64 // next sequence to send

	lastFlush time.Time     // last DATA batch
	lastSend  time.Time     // last datagram of any kind
	hbEvery   time.Duration // the next heartbeat's interval after lastSend
	pending   bool          // a partial frame waits for its linger
	final     bool          // a graceful stop's last rounds: no linger (finish)
	handing   bool          // a Handoff's round: no linger either
	wide      bool          // this round's datagrams carry the wide session trailer
	hb        []byte        // a heartbeat datagram, with room for its seal
	ws        shm.WaitStrategy
	hand      handWait // the waits once records come by Handoff
	// hold is how long the sender has found records without waiting
	// (yielding modes only, held true): it yields every
	// idle.BusyYieldEvery of that, as a Loop does.
	hold idle.Hold
	held bool
	// duty is the sender's share of time spent sending (adaptive only,
	// with a datagram transport): a hot sender yields for
	// idle.HotYieldFor before its ring wait proper (await).
	duty     idle.Duty
	adaptive bool
	// hotWaits counts the waits begun hot (added by the sender's
	// goroutine, loaded by Stats).
	hotWaits atomic.Uint64
}

func newSender(s *Server) *sender {
	sn := &sender{s: s, feed: newFeed(s.ring), mtu: s.mtu, next: s.lastSent.Load() + 1,
		frames: make([][]byte, sendFrames), firsts: make([]uint64, sendFrames), ws: ringWait(s.cfg.Wait),
		held: s.cfg.Wait.Yields(), adaptive: s.cfg.Wait == WaitAdaptive,
		hbEvery: udpHeartbeat, hb: make([]byte, wire.HeaderSize, wire.HeaderSize+max(auth.Overhead, wire.TrailerSize))}
	for i := range sn.frames {
		sn.frames[i] = make([]byte, 0, MaxMTU)
	}
	return sn
}

// sendLoop is the ring's one watcher: it sends datagrams (when the server
// has a datagram transport) and wakes the TCP sessions when records come.
// Its rounds hold s.sendMu, which Handoff takes to run one on another
// goroutine; it waits for the ring without it, or, once Handoff carries
// the records (a hub), sleeps until its deadline (handWait). It ends with
// ctx, Close, or once a graceful stop has sent the last datagram
// (stop.halted, stored under s.sendMu: no round runs after it).
func (s *Server) sendLoop(ctx context.Context, sn *sender) {
	// A ring cut under us ends serving it, not the process.
	defer s.guardRing(shm.Guard())
	if unlock, err := idle.LockThread(s.cfg.Pin.cpu()); err == nil { // NewServer checked the CPU
		defer unlock()
	}
	defer sn.stopHandWait()
	defer sn.wakeOnDone(ctx)()
	seen := s.ring.WriteSeq()
	for ctx.Err() == nil && !s.closed.Load() {
		var target uint64
		var deadline time.Time
		handed := sn.hand.handed.Load() && sn.hand.idler != nil
		if handed {
			sn.hand.idler.Round() // a Handoff's wake from now on ends the sleep below
		}
		s.sendMu.Lock()
		if s.stop.halted.Load() {
			s.sendMu.Unlock()
			return
		}
		var now time.Time // the round's time: a TCP-only sender reads none
		if s.udp != nil {
			now = time.Now()
			before := sn.next
			target = sn.round(now)
			if sn.adaptive && sn.next != before {
				sn.duty.Work(now)
			}
		} else {
			target = s.ring.WriteSeq() + 1
		}
		deadline = sn.deadline()
		sn.hand.due.Store(deadline.UnixNano())
		s.sendMu.Unlock()
		if w := s.ring.WriteSeq(); w != seen {
			if s.udp == nil {
				trace.Stamp(trace.Picked, seen+1) // the TCP-only sender's round is this
			}
			seen = w
			s.wakeSessions()
			s.wakeTelemetry()
		}
		sn.yieldIfHeld(now, target, handed) // after the sessions' direct sends
		if d := time.Until(deadline); d > 0 {
			switch {
			case !handed:
				s.senderWaits.Add(1)
				sn.await(target, d)
			case s.ring.WriteSeq() < target: // else a Handoff missed the lock: go again
				s.senderWaits.Add(1)
				sn.hand.sleep(d)
			}
		}
	}
}

// hotWait is the ring wait of a hot adaptive sender: sched_yield between
// polls, as WaitYield's.
var hotWait = shm.SpinSchedYield(0)

// await waits until the ring reaches target, at most d. An adaptive
// sender that is hot (idle.Duty: it has been sending for at least
// 1/idle.HotShare of its time) first yields between polls for up to
// idle.HotYieldFor, as the mirror's loop does, instead of reaching its
// futex sleep after senderYields polls: a sleep between the bursts of a
// steady stream costs the producer a FUTEX_WAKE for every record it
// publishes until the woken sender runs (idle.HotYieldFor says more).
func (sn *sender) await(target uint64, d time.Duration) {
	r := sn.s.ring
	if r.WriteSeq() >= target { // more to send: no wait, and the stretch of work goes on
		return
	}
	if sn.adaptive && sn.s.udp != nil {
		now := time.Now()
		sn.duty.Rest(now)
		if sn.duty.Hot() {
			sn.hotWaits.Add(1)
			hot := min(d, idle.HotYieldFor)
			if r.Await(target, hotWait, hot) || hot == d {
				return
			}
			d -= hot
		}
	}
	r.Await(target, sn.ws, d)
}

// yieldIfHeld keeps the sender's Hold after a round at now (zero: the
// round read no clock, and a busy one reads it here): a round that leaves
// target already published (the wait below returns at once) is busy, and
// a yielding sender that has been busy for idle.BusyYieldEvery yields
// once; any other round waits, and so gives its CPU up (every yielding
// mode's ring wait yields at its first poll: senderSpins is 0).
func (sn *sender) yieldIfHeld(now time.Time, target uint64, handed bool) {
	switch {
	case !sn.held:
	case !handed && sn.s.ring.WriteSeq() >= target:
		if now.IsZero() {
			now = time.Now()
		}
		if sn.hold.Busy(now) {
			sn.s.senderBusyYields.Add(1)
		}
	default:
		sn.hold.Gave()
	}
}

// round sends what is ready and returns the sequence whose publication
// should wake the sender next. After a graceful stop's last datagram it
// does nothing (a Handoff may still call it).
func (sn *sender) round(now time.Time) uint64 {
	if sn.s.stop.halted.Load() {
		return sn.next
	}
	return sn.roundTo(now, math.MaxUint64)
}

// roundTo is round with the records up to w ready (write_seq if less).
func (sn *sender) roundTo(now time.Time, w uint64) uint64 {
	defer sn.s.recoverRound() // a cut ring: the caller goes on, sendMu released
	w = min(w, sn.s.ring.WriteSeq())
	s := sn.s
	dests := *s.dests.Load()
	if len(dests) == 0 && !s.cfg.Multicast.IsValid() {
		if sn.next <= w {
			trace.Stamp(trace.Picked, sn.next)
		}
		sn.next = max(sn.next, w+1) // nobody to send to; TCP catch-up covers it
		storeMax(&s.lastSent, sn.next-1)
		storeMax(&s.sentDone, sn.next-1)
		sn.pending = false
		// No heartbeat is owed to nobody, but its interval passes the
		// same: the next round is due as an idle heartbeat's would be, not
		// at once on every round; records wake the sender anyway.
		sn.beat(now)
		return sn.next
	}
	if sn.next <= w {
		trace.Stamp(trace.Picked, sn.next)
	}
	sn.wide = s.anyWide(dests)
	nf := sn.build(now, w)
	if nf > 0 {
		sn.send(now, nf, dests)
	} else {
		// Records skipped without a frame (too big for a datagram, or
		// lost) are done with: the heartbeat must announce them, or a
		// mirror never NAKs a tail that went out in no datagram.
		storeMax(&s.lastSent, sn.next-1)
		storeMax(&s.sentDone, sn.next-1)
		if now.Sub(sn.lastSend) >= sn.hbEvery {
			sn.heartbeat(now, dests)
		}
	}
	if sn.pending {
		return w + 1
	}
	return sn.next
}

// build fills frames from the ring: full frames always, a partial frame
// only once the linger since the previous batch has passed (or at once in
// a graceful stop's last rounds).
func (sn *sender) build(now time.Time, w uint64) int {
	s := sn.s
	nf := 0
	sn.pending, sn.count = false, 0
	for sn.next <= w && nf < sendFrames {
		buf, count, why := sn.feed.fill(sn.frames[nf][:0], sn.next, w, sn.mtu-s.overhead(sn.wide), s.batch())
		if why == stopCaughtUp && count > 0 && s.cfg.Linger > 0 && !sn.final && !sn.handing && now.Sub(sn.lastFlush) < s.cfg.Linger {
			sn.pending = true
			break
		}
		if count > 0 {
			buf[1] = s.session // a datagram's flags carry the session
			sn.frames[nf], sn.firsts[nf] = s.seal(buf, sn.wide), sn.next
			sn.count += uint64(count)
			nf++
			sn.next += uint64(count)
		}
		switch why {
		case stopLost:
			sn.next = sn.feed.skipLost(sn.next, w) // mirrors NAK, the session answers GAP
		case stopTooBig:
			s.st.skipped.Add(1) // mirrors NAK it: the answer goes over TCP
			sn.next++
		case stopCaughtUp:
			return nf
		}
	}
	return nf
}

func (s *Server) batch() int {
	if s.cfg.Batch > 0 {
		return s.cfg.Batch
	}
	return 0xFFFF
}

// send transmits frames[:nf] to every destination, Dup times, in one
// batch, then publishes the last sequence sent.
func (sn *sender) send(now time.Time, nf int, dests []dest) {
	s := sn.s
	sn.msgs = sn.msgs[:0]
	for range s.cfg.Dup {
		for i := range nf {
			sn.msgs = sn.appendDests(sn.msgs, sn.frames[i], dests)
		}
	}
	// Publish the last sequence before sending: a mirror may NAK a hole
	// behind a datagram of this batch while the batch is still going out,
	// and a NAK is checked against what was sent.
	storeMax(&s.lastSent, sn.next-1)
	// Count the records, frames and datagrams before sending too: a
	// mirror may have them (and someone read Stats) before SendBatch
	// returns. Datagrams not sent are taken off again after it.
	s.st.records.Add(sn.count)
	s.st.frames.Add(uint64(nf))
	s.st.datagrams.Add(uint64(len(sn.msgs)))
	trace.Stamp(trace.Sending, sn.next-1)
	n, err := s.udp.SendBatch(sn.msgs)
	s.st.syscalls.Add(uint64((len(sn.msgs) + 63) / 64))
	sn.unsent(n)
	if errors.Is(err, unix.EMSGSIZE) && sn.mtu > MinMTU {
		s.st.records.Add(-sn.count) // not sent after all: they go again in smaller frames
		s.st.frames.Add(-uint64(nf))
		sn.mtu = max(MinMTU, sn.mtu*3/4)
		sn.next = sn.firsts[0]
		return
	}
	trace.Stamp(trace.Sent, sn.next-1)
	storeMax(&s.sentDone, sn.next-1)
	sn.lastFlush, sn.lastSend, sn.hbEvery = now, now, udpHeartbeat
}

// unsent takes off the datagrams counted for sn.msgs that SendBatch did
// not send (it sent n).
func (sn *sender) unsent(n int) {
	if n < len(sn.msgs) {
		sn.s.st.datagrams.Add(-uint64(len(sn.msgs) - n))
	}
}

// appendDests adds datagram b for the group and every destination. A
// round with the wide session's trailer (sn.wide, no key) sends b whole
// to those that take it and b without its trailer to the others.
func (sn *sender) appendDests(ms []Message, b []byte, dests []dest) []Message {
	s := sn.s
	v1 := b
	if sn.wide && s.keyed == nil {
		v1 = b[:len(b)-wire.TrailerSize]
	}
	if g := s.cfg.Multicast; g.IsValid() {
		mb := v1
		if s.cfg.WideMulticast {
			mb = b
		}
		ms = append(ms, Message{Buf: mb, Addr: g})
	}
	for _, d := range dests {
		db := v1
		if d.wide {
			db = b
		}
		ms = append(ms, Message{Buf: db, Addr: d.addr})
	}
	return ms
}

// heartbeat announces the last sequence sent, so that a mirror that lost
// the last datagram notices and NAKs.
func (sn *sender) heartbeat(now time.Time, dests []dest) {
	s := sn.s
	wire.Header{Kind: wire.KindHeartbeat, Flags: s.session, Seq: s.lastSent.Load()}.Put(sn.hb[:wire.HeaderSize])
	sn.msgs = sn.appendDests(sn.msgs[:0], s.seal(sn.hb[:wire.HeaderSize], sn.wide), dests)
	s.st.heartbeats.Add(1) // counted before it goes, as send counts
	s.st.datagrams.Add(uint64(len(sn.msgs)))
	n, _ := s.udp.SendBatch(sn.msgs)
	sn.unsent(n)
	sn.beat(now)
}

// beat starts the next heartbeat interval at now, twice the last one, up
// to udpHeartbeatIdle.
func (sn *sender) beat(now time.Time) {
	sn.lastSend, sn.hbEvery = now, min(2*sn.hbEvery, udpHeartbeatIdle)
}

// deadline is when the sender must run a round even if no record comes:
// the pending frame's linger ends or a heartbeat is due (s.sendMu held).
func (sn *sender) deadline() time.Time {
	switch {
	case sn.s.udp == nil:
		return time.Now().Add(tcpHeartbeat)
	case sn.pending:
		return sn.lastFlush.Add(sn.s.cfg.Linger)
	}
	return sn.lastSend.Add(sn.hbEvery)
}
