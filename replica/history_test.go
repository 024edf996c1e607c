package replica_test

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// histRing is the capacity of the source rings of the history tests: a
// ring far smaller than what they push.
const histRing = 1024

// TestHistoryCatchUpFromOverwritten: a mirror started at a sequence its
// source's ring overwrote long ago (a ring of 1024, 50,000 records pushed)
// gets every record from it on out of the history, then joins the ring's
// records and the live stream with no hole and no duplicate, while the
// source keeps pushing and the datagrams lose one in 13.
func TestHistoryCatchUpFromOverwritten(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast", "unicast", "xdp-multicast", "xdp-unicast"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, histRing)
		h := newMemHistory()
		recordInto(src, h)
		src.push(50000)
		const from = 100
		var data uint64 // DATA datagrams seen (under the faulty transport's lock)
		faults := &faulty.Faults{Drop: func(k wire.Kind, _, _ uint64) bool {
			if k != wire.KindData {
				return false
			}
			data++
			return data%13 == 0
		}}
		srv, mr := serveMirrored(t, p, src, mode, replica.From{Mode: replica.FromSeq, Seq: from}, faults,
			withHistory(h), func(c *replica.ServerConfig) { c.Events = logEvents(t) })
		mr.connected()
		src.pushPaced(20000, 20, time.Millisecond) // during the catch-up: the ring laps it many times
		last := src.w.Next() - 1
		mr.waitFor(last, 60*time.Second)
		sst, st := finish(t, srv, mr)
		oneConnection(t, st)
		if want := last - from + 1; st.Records != want || st.Gaps != 0 || st.Duplicates != 0 || st.Next != last+1 || !st.History {
			t.Fatalf("mirror: %d records, %d gaps, %d duplicates, next %d, history %v; want %d records from %d to %d, no gap or duplicate, history",
				st.Records, st.Gaps, st.Duplicates, st.Next, st.History, want, from, last)
		}
		if sst.History.Records < 40000 || sst.History.Errors != 0 || sst.Gaps != 0 {
			t.Fatalf("server: %+v, gaps %d: want the history to carry the overwritten records, no error, no GAP", sst.History, sst.Gaps)
		}
		if mode != "tcp" && (mr.faults.Stats().Dropped == 0 || st.NaksSent == 0) {
			t.Fatalf("no loss repaired: faults %+v, mirror %+v", mr.faults.Stats(), st)
		}
		sameSlots(t, src.path, mr.path, 1) // the last records, byte for byte
	})
}

// TestHistoryHoleIsGap: records the history lacks as well as the ring (a
// hole the recorder saw) come as a GAP for exactly them; the records after
// the hole still come from the history.
func TestHistoryHoleIsGap(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, histRing)
		h := newMemHistory()
		h.skip = func(seq uint64) bool { return seq >= 3000 && seq < 3500 }
		recordInto(src, h)
		src.push(20000)
		const from = 1000
		srv, mr := serveMirrored(t, p, src, mode, replica.From{Mode: replica.FromSeq, Seq: from}, nil, withHistory(h))
		mr.waitFor(20000, 30*time.Second)
		sst, st := finish(t, srv, mr)
		if st.Gaps != 500 || st.Records != 20000-from+1-500 || st.Duplicates != 0 {
			t.Fatalf("mirror: %d gaps, %d records, %d duplicates: want exactly the hole 3000..3499 lost, %d records",
				st.Gaps, st.Records, st.Duplicates, 20000-from+1-500)
		}
		if sst.Gaps != 1 || sst.GapRecords != 500 || sst.History.Errors != 0 {
			t.Fatalf("server: %d GAPs of %d records, history %+v: want one GAP of 500", sst.Gaps, sst.GapRecords, sst.History)
		}
		sameSlots(t, src.path, mr.path, 1)
	})
}

// TestHistoryErrorFallsBackToGap: a History whose Read fails, or gives a
// record of the wrong size, sends what it read, then a GAP up to the
// ring's records, and counts the error.
func TestHistoryErrorFallsBackToGap(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(h *memHistory, seq uint64)
	}{
		{"read error", func(h *memHistory, seq uint64) { h.failAt = seq }},
		{"bad record", func(h *memHistory, seq uint64) { h.badAt = seq }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, src := pairSource(t, histRing)
			h := newMemHistory()
			recordInto(src, h)
			src.push(20000)
			const from = 1000
			c.set(h, from+300)
			oldest := src.w.Ring().Oldest()
			srv, mr := serveMirrored(t, p, src, "tcp", replica.From{Mode: replica.FromSeq, Seq: from}, nil, withHistory(h))
			mr.waitFor(20000, 30*time.Second)
			sst, st := finish(t, srv, mr)
			lost := oldest - (from + 300)
			if st.Gaps != lost || st.Records != 300+20000-oldest+1 {
				t.Fatalf("mirror: %d gaps, %d records: want %d records from the history, a GAP of %d, the ring's %d",
					st.Gaps, st.Records, 300, lost, 20000-oldest+1)
			}
			if sst.History.Errors != 1 || sst.History.Records != 300 || sst.GapRecords != lost {
				t.Fatalf("server: history %+v, %d GAP records: want 1 error, 300 records, a GAP of %d", sst.History, sst.GapRecords, lost)
			}
		})
	}
}

// TestHistoryBudget: the history's frames are repair: a per-address
// budget of 300 KiB/s makes the session wait (and leave frames for later,
// errRepairLater), counted in Repair, and every record still comes.
func TestHistoryBudget(t *testing.T) {
	p, src := pairSource(t, histRing)
	h := newMemHistory()
	recordInto(src, h)
	src.push(6000)
	const from = 100
	srv, mr := serveMirrored(t, p, src, "tcp", replica.From{Mode: replica.FromSeq, Seq: from}, nil, withHistory(h),
		func(c *replica.ServerConfig) { c.RepairAddrRate = 300 << 10 })
	mr.waitFor(6000, 30*time.Second)
	sst, st := finish(t, srv, mr)
	if st.Gaps != 0 || st.Records != 6000-from+1 {
		t.Fatalf("mirror: %d gaps, %d records, want %d", st.Gaps, st.Records, 6000-from+1)
	}
	if sst.Repair.CatchUpWaits == 0 || sst.Repair.CatchUpBytes < sst.History.Bytes || sst.History.Records < 4000 {
		t.Fatalf("server: repair %+v, history %+v: want the history paid for by the budget, and waiting", sst.Repair, sst.History)
	}
}

// TestHistoryHotThreadDefers: a direct send (here the test goroutine, as
// it gives back a stream it held) that meets records the ring lost never
// reads the History itself: it asks for the writer, which serves them.
func TestHistoryHotThreadDefers(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	l, lt := newTurnedLoop(t)
	tt := turners{tb: t, loops: []*replica.LoopTurner{lt}}
	src := newSource(t, p.A, p.AAddr, histRing)
	h := newMemHistory()
	recordInto(src, h)
	scfg, mcfg := transportConfigs("tcp")
	scfg.Loop, scfg.History = l, h
	srv := src.serve(scfg)
	mcfg.From = fromOldest
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	src.push(10)
	tt.until("the first records copied", func() bool { return mr.m.Stats().Next == 11 })
	var release func() bool
	tt.until("the writer parked", func() bool { release = replica.HoldStream(srv); return release != nil })
	src.push(3 * histRing) // the ring laps the stream's cursor
	if !release() {
		t.Fatal("a direct send met records the ring lost and did not ask for the writer")
	}
	if h.readOn(goroutineID()) {
		t.Fatal("the direct send read the History itself")
	}
	last := src.w.Next() - 1
	tt.until("the records the ring lost served", func() bool { return mr.m.Stats().Next == last+1 })
	sst, st := finish(t, srv, mr)
	if st.Gaps != 0 || st.Records != last || sst.History.Records == 0 {
		t.Fatalf("mirror: %d gaps, %d records (want %d); history %+v", st.Gaps, st.Records, last, sst.History)
	}
}

// TestHistoryRetention: records retention took from the history after
// they were sent, NAKed, are a GAP up to the history's first record, then
// come from it, whether the History starts a Read at the next record it
// holds or, stricter, delivers nothing.
func TestHistoryRetention(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			p, src := pairSource(t, histRing)
			h := newMemHistory()
			h.strict = strict
			recordInto(src, h)
			src.push(3000)
			srv := src.serve(replica.ServerConfig{History: h})
			conn := dialTCP(t, p.B, srv.Addr().String())
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			fr := &rawFrames{t: t, br: bufio.NewReader(conn)}
			if _, err := conn.Write(wire.AppendHello(nil, 1000, wire.Hello{Flags: wire.HelloHistory})); err != nil {
				t.Fatal(err)
			}
			if g, _ := fr.next(); g.Kind != wire.KindGeometry || g.Seq != 1000 {
				t.Fatalf("got %+v, want GEOMETRY at 1000", g)
			}
			fr.dataUpTo(3000)
			h.retain(1500)
			if _, err := conn.Write(wire.AppendNak(nil, 1200, 1799)); err != nil {
				t.Fatal(err)
			}
			for {
				g, _ := fr.next()
				if g.Kind == wire.KindHeartbeat {
					continue
				}
				if g != (wire.Header{Kind: wire.KindGap, Seq: 1500}) {
					t.Fatalf("NAK answered %+v, want a GAP to 1500", g)
				}
				break
			}
			checkHistoryData(t, fr, h, 1500, 1799)
			if st := srv.Stats(); st.GapRecords != 300 || st.History.Errors != 0 {
				t.Fatalf("server: %d GAP records, history %+v: want the 300 retention took", st.GapRecords, st.History)
			}
		})
	}
}

// TestHistoryNotAnnounced: a mirror that does not announce HelloHistory
// (NoHistory) is served as today by a source with a history: from the
// ring's oldest record, nothing read from the history; a mirror that
// announces it to a source without one is served as today too.
func TestHistoryNotAnnounced(t *testing.T) {
	for _, c := range []struct {
		name               string
		serverHas, mirrors bool
	}{{"old mirror", true, false}, {"old source", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			p, src := pairSource(t, histRing)
			h := newMemHistory()
			recordInto(src, h)
			src.push(20000)
			oldest := src.w.Ring().Oldest()
			scfg, mcfg := transportConfigs("tcp")
			if c.serverHas {
				scfg.History = h
			}
			mcfg.NoHistory = !c.mirrors
			mcfg.From = replica.From{Mode: replica.FromSeq, Seq: 1000}
			srv := src.serve(scfg)
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			mr.waitFor(20000, 30*time.Second)
			sst, st := finish(t, srv, mr)
			if st.History || st.Records != 20000-oldest+1 || st.Gaps != 0 || sst.History.Reads != 0 || h.reads != 0 {
				t.Fatalf("mirror %+v, server history %+v: want today's start at the oldest record %d, no history", st, sst.History, oldest)
			}
		})
	}
}

// TestHistoryWire: over a raw session, a HELLO with HelloHistory from a
// sequence the ring overwrote gets GEOMETRY (flag GeometryHistory) at that
// sequence and the records from the history; a NAK for records overwritten
// since they were sent is answered from the history in DATA frames. A
// version-1 HELLO (no flag) gets exactly today's bytes: GEOMETRY at the
// ring's oldest record, and a GAP for the NAK.
func TestHistoryWire(t *testing.T) {
	p, src := pairSource(t, histRing)
	h := newMemHistory()
	recordInto(src, h)
	src.push(3000)
	srv := src.serve(replica.ServerConfig{History: h})
	geom := wire.GeometryOf(src.w.Ring().Layout())
	for _, c := range []struct {
		name  string
		flags uint8
	}{{"history", wire.HelloHistory}, {"version 1", 0}} {
		t.Run(c.name, func(t *testing.T) {
			history := c.flags != 0
			conn := dialTCP(t, p.B, srv.Addr().String())
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			fr := &rawFrames{t: t, br: bufio.NewReader(conn)}
			const start = 100 // long overwritten
			if _, err := conn.Write(wire.AppendHello(nil, start, wire.Hello{Flags: c.flags})); err != nil {
				t.Fatal(err)
			}
			gh, gp := fr.next()
			got := make([]byte, wire.HeaderSize, wire.HeaderSize+len(gp))
			gh.Put(got)
			got = append(got, gp...)
			oldest := src.w.Ring().Oldest()
			want := wire.AppendGeometry(nil, oldest, 0, geom) // today's bytes
			if history {
				want = wire.AppendGeometry(nil, start, wire.GeometryHistory, geom)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("GEOMETRY %+v (oldest %d), want % x", gh, oldest, want[:wire.HeaderSize])
			}
			if history {
				checkHistoryData(t, fr, h, start, start+99)
			}
			fr.dataUpTo(src.w.Next() - 1)
			nakFrom := src.w.Next() - 500 // sent on this connection, then overwritten:
			src.push(2000)
			fr.dataUpTo(src.w.Next() - 1)
			if _, err := conn.Write(wire.AppendNak(nil, nakFrom, nakFrom+99)); err != nil {
				t.Fatal(err)
			}
			if history {
				checkHistoryData(t, fr, h, nakFrom, nakFrom+99)
				return
			}
			for {
				g, _ := fr.next()
				if g.Kind == wire.KindHeartbeat {
					continue
				}
				if g != (wire.Header{Kind: wire.KindGap, Seq: nakFrom + 100}) {
					t.Fatalf("NAK answered %+v, want today's GAP to %d", g, nakFrom+100)
				}
				return
			}
		})
	}
	if st := srv.Stats(); st.History.Records < 200 || st.Retransmitted < 100 {
		t.Fatalf("server: history %+v, %d retransmitted", st.History, st.Retransmitted)
	}
}

// checkHistoryData reads the stream's next DATA frames, skipping
// heartbeats, until they carried first..last, each record the history's.
func checkHistoryData(t *testing.T, fr *rawFrames, h *memHistory, first, last uint64) {
	t.Helper()
	next := first
	for next <= last {
		dh, p := fr.next()
		if dh.Kind == wire.KindHeartbeat {
			continue
		}
		if dh.Kind != wire.KindData || dh.Seq != next {
			t.Fatalf("got %+v, want DATA from %d", dh, next)
		}
		for i := range uint64(dh.Count) {
			rec, ok := h.get(next + i)
			if !ok || !bytes.Equal(p[i*recordSize:(i+1)*recordSize], rec) {
				t.Fatalf("record %d is not the history's", next+i)
			}
		}
		next += uint64(dh.Count)
	}
}

// TestHistoryBlobRing: a blob ring's records the ring (or its arena) lost
// come from the history whole, a blob larger than a frame alone in its
// frame, over TCP and after a multicast catch-up.
func TestHistoryBlobRing(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast"}, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		size := sizeMix(97, 5, func(uint64) int { return 100 << 10 }, 16, 2000)
		src := newBlobSource(t, p.A, p.AAddr, 256, 1<<20, size)
		h := newMemHistory()
		r := src.w.Ring()
		slot := make([]byte, r.Layout().PayloadSize())
		src.publish = func(seq uint64) error {
			if err := src.pushBlob(seq); err != nil {
				return err
			}
			if st, _ := r.ReadSlot(seq, slot); st != shm.SlotReady {
				return fmt.Errorf("record %d just pushed: %v", seq, st)
			}
			d := shm.DecodeDescriptor(slot)
			rec := append(append([]byte(nil), slot...), make([]byte, d.Len)...)
			if whole, err := r.ReadBlob(d, rec[len(slot):]); err != nil || !whole {
				return fmt.Errorf("blob %d just pushed: whole %v, %v", seq, whole, err)
			}
			h.add(seq, rec)
			return nil
		}
		src.push(3000)
		const from = 10
		srv, mr := serveMirrored(t, p, src.source, mode, replica.From{Mode: replica.FromSeq, Seq: from}, nil, withHistory(h))
		mr.waitFor(3000, 30*time.Second)
		sst, st := finish(t, srv, mr)
		if st.Gaps != 0 || st.Records != 3000-from+1 || sst.History.Errors != 0 || sst.History.Records < 2000 {
			t.Fatalf("mirror: %d gaps, %d records (want %d); history %+v", st.Gaps, st.Records, 3000-from+1, sst.History)
		}
		if n := sameBlobs(t, src, mr.path, 1, false); n == 0 {
			t.Fatal("no record compared")
		}
	})
}
