package replica_test

// Scenario tests (part A2): the datagram paths — multicast catch-up,
// loss and its recovery, lapped sources, foreign sessions, reordering.

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// saStartLive serves src in mode (tweak may adjust the server's settings)
// and starts a FromLatest mirror on the empty ring, waiting until it is
// connected: every record then comes live.
func saStartLive(t *testing.T, p *netns.Pair, src *source, mode string, faults *faulty.Faults, tweak func(*replica.ServerConfig)) (*replica.Server, *mirror) {
	t.Helper()
	events := func(scfg *replica.ServerConfig) { scfg.Events = logEvents(t) }
	srv, mr := serveMirrored(t, p, src, mode, replica.From{}, faults, events, tweak)
	mr.connected()
	return srv, mr
}

// TestMulticastHistoryOverTCPThenLive: a FromOldest multicast mirror gets
// the history over TCP, then the live stream over multicast.
func TestMulticastHistoryOverTCPThenLive(t *testing.T) {
	p, src := pairSource(t, 8192)
	src.push(3000)
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	src.pushPaced(3000, 50, 200*time.Microsecond)
	mr.waitFor(6000, 10*time.Second)
	sst, st := finish(t, srv, mr)
	udp := st.Records - st.CatchUp - st.Retransmitted
	wantAll(t, st, 6000, "udp multicast")
	if st.CatchUp < 2*1170 || sst.TCPRecord < 3000 {
		t.Fatalf("history: %d records caught up over TCP (server sent %d over TCP), want the 3000 of history", st.CatchUp, sst.TCPRecord)
	}
	if st.Datagrams == 0 || udp < 2900 || sst.Records < 3000 || sst.Frames == 0 {
		t.Fatalf("live: %d records from %d datagrams; server %+v", udp, st.Datagrams, sst)
	}
	sameSlots(t, src.path, mr.path, 1)
}

// saSlowSend is a source transport whose SendBatch returns late, its
// datagrams already on the wire: a sender goroutine preempted after
// sendmmsg, as on a loaded host.
type saSlowSend struct {
	replica.Transport
	delay time.Duration
}

func (s *saSlowSend) SendBatch(ms []replica.Message) (int, error) {
	n, err := s.Transport.SendBatch(ms)
	time.Sleep(s.delay)
	return n, err
}

// TestRecoveryOfDroppedDatagrams: every 7th DATA datagram is lost; NAKs
// get them back over TCP, the connection stays up and the mirror ends
// identical. The slow-sender variants NAK while the source's SendBatch has
// not yet returned.
func TestRecoveryOfDroppedDatagrams(t *testing.T) {
	eachMode(t, []string{"multicast", "unicast", "multicast/slow-sender", "unicast/slow-sender"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, 8192)
		var data uint64 // DATA datagrams seen (under the faulty transport's lock)
		faults := &faulty.Faults{Drop: func(k wire.Kind, _, _ uint64) bool {
			if k != wire.KindData {
				return false
			}
			data++
			return data%7 == 0
		}}
		base, slow := strings.CutSuffix(mode, "/slow-sender")
		srv, mr := saStartLive(t, p, src, base, faults, func(scfg *replica.ServerConfig) {
			if !slow {
				return
			}
			u := newUDPIn(t, src.ns, replica.UDPConfig{Iface: src.addr, SocketBuffer: 4 << 20,
				Bind: netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(scfg.UDPPort))}) // closed by the server
			scfg.Transport = &saSlowSend{Transport: u, delay: 20 * time.Millisecond}
		})
		src.pushPaced(6000, 50, 200*time.Microsecond)
		mr.waitFor(6000, 10*time.Second)
		sst := srv.Stats()
		mr.close()
		st, fs := mr.m.Stats(), mr.faults.Stats()
		t.Logf("dropped %d of %d datagrams; mirror sent %d NAKs, %d records retransmitted; server answered %d NAKs with %d records",
			fs.Dropped, fs.Received, st.NaksSent, st.Retransmitted, sst.NaksAnswered, sst.Retransmitted)
		oneConnection(t, st)
		if fs.Dropped == 0 || st.NaksSent == 0 || st.Retransmitted == 0 || sst.NaksAnswered == 0 || sst.Retransmitted == 0 {
			t.Fatalf("no recovery seen: faults %+v, mirror %+v, server %+v", fs, st, sst)
		}
		wantAll(t, st, 6000, "")
		sameSlots(t, src.path, mr.path, 1)
		ringHolds(t, mr.path, 1, 6000)
	})
}

// saDropContaining is a datagram transport that loses, once, the DATA
// datagram carrying record target (0: none yet).
type saDropContaining struct {
	replica.Transport
	target  atomic.Uint64
	dropped atomic.Uint64
	at      atomic.Int64 // when, in Unix nanoseconds
}

func (d *saDropContaining) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	n, err := d.Transport.RecvBatch(ms, wait)
	k := 0
	for i := range n {
		b := ms[i].Buf[:ms[i].N]
		if h, perr := wire.ParseHeader(b, len(b)); perr == nil && h.Kind == wire.KindData && d.dropped.Load() == 0 {
			if s := d.target.Load(); s != 0 && h.Seq <= s && s < h.Seq+uint64(h.Count) {
				d.dropped.Add(1)
				d.at.Store(time.Now().UnixNano())
				continue
			}
		}
		if k != i {
			ms[k].N = copy(ms[k].Buf[:cap(ms[k].Buf)], b)
			ms[k].Addr = ms[i].Addr
		}
		k++
	}
	return k, err
}

// TestLastDatagramLossRecoveredByHeartbeat: the datagram carrying the last
// record of a burst is lost and nothing follows; the heartbeat announcing
// it makes the mirror NAK and get it.
func TestLastDatagramLossRecoveredByHeartbeat(t *testing.T) {
	eachMode(t, udpModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 8192)
		scfg, mcfg := transportConfigs(mode)
		scfg.Events = logEvents(t)
		srv := src.serve(scfg)
		drop := &saDropContaining{}
		mcfg.NewTransport = wrapMirrorUDP(func(tr replica.Transport) replica.Transport {
			drop.Transport = tr
			return drop
		})
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr.connected()
		src.pushPaced(1000, 50, 200*time.Microsecond)
		before := mr.waitFor(1000, 10*time.Second)

		drop.target.Store(1200)
		src.push(200) // one burst: its last datagram carries 1200; nothing after it
		st := mr.waitFor(1200, 5*time.Second)
		recovered := time.Now()
		sst := srv.Stats()
		mr.close()
		oneConnection(t, st)
		if drop.dropped.Load() != 1 {
			t.Fatalf("the datagram carrying 1200 was not dropped (mirror %+v)", st)
		}
		t.Logf("recovered %v after the loss; %d NAKs, %d records retransmitted",
			recovered.Sub(time.Unix(0, drop.at.Load())), st.NaksSent-before.NaksSent, st.Retransmitted-before.Retransmitted)
		if st.NaksSent == before.NaksSent || st.Retransmitted == before.Retransmitted || sst.NaksAnswered == 0 {
			t.Fatalf("record 1200 arrived without a NAK: before %+v, after %+v", before, st)
		}
		wantAll(t, st, 1200, "")
		if st.Heartbeat < 1200 {
			t.Fatalf("stats %+v", st)
		}
		sameSlots(t, src.path, mr.path, 1)
	})
}

// TestLappedSourceGapsNeverDisorder: a mirror loses every datagram for a
// while as a small source ring laps many times; the NAK answers carry GAPs
// for what the source lost, the mirror never reorders or duplicates, and
// it then follows the live stream again without new gaps. The
// gap-within-nak-range subtest checks the GAP answering a NAK on the wire.
func TestLappedSourceGapsNeverDisorder(t *testing.T) {
	netns.Require(t)
	t.Run("gap-within-nak-range", saNakGapWithinRange)
	eachMode(t, udpModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 256)
		var blackout atomic.Bool
		faults := &faulty.Faults{Drop: func(wire.Kind, uint64, uint64) bool { return blackout.Load() }}
		srv, mr := saStartLive(t, p, src, mode, faults, nil)
		src.pushPaced(1000, 20, 200*time.Microsecond)
		mr.waitFor(1000, 10*time.Second)

		blackout.Store(true)
		src.push(5000) // about 20 laps of the source ring, all lost to the mirror
		time.Sleep(20 * time.Millisecond)
		blackout.Store(false)
		src.pushPaced(1000, 20, 200*time.Microsecond)
		st := mr.waitFor(7000, 10*time.Second)
		sst := srv.Stats()
		oneConnection(t, st)
		t.Logf("mirror: %d records, %d gaps, %d NAKs, stale %d; server: %d GAP frames for %d records",
			st.Records, st.Gaps, st.NaksSent, st.Stale, sst.Gaps, sst.GapRecords)
		if st.Gaps == 0 || sst.Gaps == 0 || st.NaksSent == 0 || st.Records+st.Gaps != 7000 {
			t.Fatalf("mirror %+v, server %+v", st, sst)
		}
		ringHolds(t, mr.path, 7000-255, 7000) // in order, checked, never twice
		sameSlots(t, src.path, mr.path, 1)

		// Live again: no new gaps. The producer goes at the mirror's pace
		// (batches smaller than the ring): a mirror stalled by a busy
		// machine must not see the 256-slot source ring lap it, which
		// would be a gap by design, not a fault.
		var st2 replica.MirrorStats
		for i := range uint64(10) {
			src.push(100)
			st2 = mr.waitFor(7100+100*i, 10*time.Second)
		}
		mr.close()
		if st2.Gaps != st.Gaps || st2.Records != st.Records+1000 {
			t.Fatalf("after recovery: %+v, before %+v", st2, st)
		}
		sameSlots(t, src.path, mr.path, 1)
	})
}

// TestOtherSessionIgnored: datagrams carrying another session byte, sent
// to the mirror's multicast group or unicast port, are counted and dropped:
// neither their records nor their heartbeat reach the mirror. Sent from
// the source's host but not from its UDP port, a unicast mirror drops them
// as foreign before it reads them; a multicast mirror, by their session.
func TestOtherSessionIgnored(t *testing.T) {
	eachMode(t, udpModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 8192)
		srv, mr := saStartLive(t, p, src, mode, &faulty.Faults{}, nil) // no faults: learn the mirror's address
		src.pushPaced(1000, 50, 200*time.Microsecond)
		mr.waitFor(1000, 10*time.Second)

		other := srv.Session() ^ 0xA5
		var dgrams [][]byte
		for seq := uint64(1001); seq <= 1020; seq++ { // the next records, with other contents
			dgrams = append(dgrams, saForeignData(other, seq, 1))
		}
		dgrams = append(dgrams, saForeignData(other, 1001, 3), saForeignData(other, 1, 26),
			wire.AppendEmpty(nil, wire.KindHeartbeat, other, 1_000_000))
		dst := mcastGroup()
		if baseMode(mode) == "unicast" {
			dst = mr.faults.LocalAddr()
		}
		saSendFrom(t, src, dst, dgrams)
		mr.waitStats("foreign datagrams counted", 5*time.Second, func(st replica.MirrorStats) bool {
			return st.OtherSession+st.Foreign >= uint64(len(dgrams))
		})

		src.pushPaced(1000, 50, 200*time.Microsecond)
		mr.waitFor(2000, 10*time.Second)
		mr.close()
		st := mr.m.Stats()
		// A NAK for the foreign heartbeat's 1,000,000 would have cost the
		// connection (the source never sent it): Connects stays 1.
		if st.OtherSession+st.Foreign != uint64(len(dgrams)) || st.Malformed != 0 ||
			st.Connects != 1 || st.Gaps != 0 || st.Records != 2000 || st.Heartbeat >= 1_000_000 {
			t.Fatalf("stats %+v after %d foreign datagrams", st, len(dgrams))
		}
		sameSlots(t, src.path, mr.path, 1)
		ringHolds(t, mr.path, 1, 2000)
	})
}

// saForeignData is a well-formed DATA datagram of count synthetic records
// from seq, stamped with a time the real source never uses.
func saForeignData(session uint8, seq uint64, count int) []byte {
	return dataFrame(session, seq, count, 42)
}

// saSendFrom sends datagrams to dst from a UDP socket in the source's
// namespace.
func saSendFrom(t *testing.T, src *source, dst netip.AddrPort, dgrams [][]byte) {
	t.Helper()
	u := newUDPIn(t, src.ns, replica.UDPConfig{Iface: src.addr})
	defer u.Close()
	ms := make([]replica.Message, len(dgrams))
	for i, d := range dgrams {
		ms[i] = replica.Message{Buf: d, Addr: dst}
	}
	if n, err := u.SendBatch(ms); err != nil || n != len(ms) {
		t.Fatalf("sent %d of %d foreign datagrams: %v", n, len(ms), err)
	}
}

// TestReorderedDatagramsWrittenInOrder: every 5th datagram overtaken by
// the 3 after it, some delivered twice; the mirror writes in order, drops
// the copies, and NAKs at most once per hole.
func TestReorderedDatagramsWrittenInOrder(t *testing.T) {
	eachMode(t, udpModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 8192)
		faults := &faulty.Faults{
			Hold:  func(_ wire.Kind, _, n uint64) bool { return n%5 == 0 },
			Delay: 3,
			Dup:   func(_ wire.Kind, _, n uint64) bool { return n%7 == 3 },
		}
		_, mr := saStartLive(t, p, src, mode, faults, nil)
		src.pushPaced(6000, 50, 200*time.Microsecond)
		mr.waitFor(6000, 10*time.Second)
		mr.close()
		st, fs := mr.m.Stats(), mr.faults.Stats()
		t.Logf("faults %+v; mirror: %d datagrams, %d duplicates, %d NAKs, %d retransmitted, %d stale",
			fs, st.Datagrams, st.Duplicates, st.NaksSent, st.Retransmitted, st.Stale)
		oneConnection(t, st)
		if fs.Held == 0 || fs.Duplicated == 0 || st.Duplicates == 0 {
			t.Fatalf("no reordering or duplication seen: faults %+v, mirror %+v", fs, st)
		}
		if st.NaksSent > 2*fs.Held+5 { // a NAK per hole, the odd one repeated after 20 ms
			t.Fatalf("NAK storm: %d NAKs for %d held datagrams (%d datagrams)", st.NaksSent, fs.Held, st.Datagrams)
		}
		wantAll(t, st, 6000, "")
		sameSlots(t, src.path, mr.path, 1)
		ringHolds(t, mr.path, 1, 6000)
	})
}

// saNakGapWithinRange: a NAK for records the source lost long ago is
// answered with a GAP naming the record right after the NAKed range, not
// the source's oldest record: records past the range are not the NAK's to
// declare lost (a mirror may already hold them, and drops what a GAP
// covers).
func saNakGapWithinRange(t *testing.T) {
	p, src := pairSource(t, 64)
	src.push(1000) // 937..1000 retained
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	c := dialTCP(t, p.B, srv.Addr().String())
	read := frameReader(t, c) // one frame; its payload is skipped
	// HELLO and the NAK in one write: the session reads the NAK after its
	// handshake, from the same buffered stream.
	hello := wire.AppendHello(nil, wire.StartNewest, wire.Hello{Flags: wire.HelloUDP})
	if _, err := c.Write(wire.AppendNak(hello, 100, 200)); err != nil {
		t.Fatal(err)
	}
	for {
		switch h := read(); {
		case h.Kind == wire.KindGeometry, h.Kind == wire.KindMulticast, h.Kind == wire.KindHeartbeat,
			h.Kind == wire.KindData && h.Seq >= 1000: // the handshake, the catch-up from the newest record
			continue
		case h.Kind == wire.KindGap:
			if h.Seq != 201 {
				t.Fatalf("NAK 100..200 answered with GAP to %d (records 201..%d declared lost unasked); server %+v", h.Seq, h.Seq-1, srv.Stats())
			}
			return
		default:
			t.Fatalf("NAK 100..200 answered with %v %d+%d", h.Kind, h.Seq, h.Count)
		}
	}
}
