package replica_test

// Scenario tests (part A): start modes, resume, restarted sources, lapping
// and multicast fan-out.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// TestLateMirrorFromOldest: a mirror joins a source holding several TCP
// frames of history with FromOldest while the source keeps pushing; it
// ends identical from the oldest retained record, without gaps. (The ring
// does not lap during the join: on a full ring written meanwhile, the
// oldest record named in GEOMETRY may be overwritten before it is read, a
// legitimate GAP.)
func TestLateMirrorFromOldest(t *testing.T) {
	eachMode(t, allModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 8192)
		src.push(6000) // five 64 KiB TCP frames of history
		_, mr := serveMirrored(t, p, src, mode, fromOldest, nil)
		// The source pushes 2000 more records at ~10k records/s while the
		// mirror joins and catches up; the last 500 only once it is
		// connected, so that records published after its handshake are
		// among those the checks below require.
		src.pushPaced(1500, 10, 500*time.Microsecond)
		mr.connected()
		src.pushPaced(500, 10, 500*time.Microsecond)
		mr.waitFor(8000, 10*time.Second)
		mr.close()
		st := mr.m.Stats()
		if st.Gaps != 0 || st.Records != 8000 || st.Next != 8001 {
			t.Fatalf("stats %+v, want records 1..8000", st)
		}
		if st.CatchUp < 6000 { // history comes over TCP whatever the transport
			t.Fatalf("history of %d records over TCP, want at least the 6000 retained at the join: %+v", st.CatchUp, st)
		}
		sameSlots(t, src.path, mr.path, 1)
		ringHolds(t, mr.path, 1, 8000)
	})
}

// TestLatestMirrorSkipsHistory: a mirror that joins with FromLatest after
// 5000 records starts at the newest one; the history is a hole that a
// reader started at the oldest record skips without waiting, counting it
// as lapped.
func TestLatestMirrorSkipsHistory(t *testing.T) {
	eachMode(t, allModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 8192)
		src.push(5000)
		_, mr := serveMirrored(t, p, src, mode, replica.From{Mode: replica.FromLatest}, nil)
		mr.waitStats("newest record", 10*time.Second, func(st replica.MirrorStats) bool { return st.Next > 5000 })

		rd, err := shm.OpenReader(mr.path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		buf := make([]byte, 56)
		recv := func(want uint64) {
			t.Helper()
			seq, err := rd.Recv(buf, 5*time.Second)
			if err != nil || seq != want {
				t.Fatalf("reader got %d (%v), want %d; lapped %d", seq, err, want, rd.Lapped())
			}
			if got, _, err := synth.Check(buf); err != nil || got != seq {
				t.Fatalf("record %d carries %d: %v", seq, got, err)
			}
		}
		recv(5000) // the newest record at the join, the history skipped
		src.pushPaced(1000, 50, 200*time.Microsecond)
		for seq := uint64(5001); seq <= 6000; seq++ {
			recv(seq)
		}
		if rd.Lapped() != 4999 {
			t.Fatalf("reader lapped %d, want the 4999-record hole", rd.Lapped())
		}
		st := mr.waitFor(6000, 10*time.Second)
		mr.close()
		if st.Records != 1001 || st.Gaps != 0 {
			t.Fatalf("stats %+v, want 1001 records (5000..6000) and no gaps", st)
		}
		sameSlots(t, src.path, mr.path, 5000)     // write_seq equal too
		for seq := uint64(1); seq < 5000; seq++ { // the history is a hole
			if s, _ := rd.Ring().ReadSlot(seq, buf); s != shm.SlotHole {
				t.Fatalf("mirror slot of history record %d: %v, want a hole", seq, s)
			}
		}
		expectSeqs(t, mr.path, 5000, 6000, 4999)
	})
}

// TestResumeWithoutDuplicates: a FromResume mirror is stopped, the source
// goes on, and a new FromResume mirror on the same ring continues it:
// every sequence exactly once, no gap, no fresh ring. In the
// lapped-while-away variant the source overwrote the records the mirror
// missed: they must be counted as gaps, as a reconnecting mirror counts
// them.
func TestResumeWithoutDuplicates(t *testing.T) {
	eachMode(t, append(allModes, "tcp/lapped-while-away"), func(t *testing.T, mode string) {
		base, lapped := strings.CutSuffix(mode, "/lapped-while-away")
		away := uint64(2000) // records pushed while no mirror runs
		if lapped {
			away = 12000
		}
		p, src := pairSource(t, 8192)
		src.push(2000)
		scfg, mcfg := transportConfigs(base)
		src.serve(scfg)
		mcfg.From = replica.From{Mode: replica.FromResume}
		mcfg.Ring = filepath.Join(t.TempDir(), "mirror")

		mr1 := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr1.connected()
		src.pushPaced(1000, 50, 200*time.Microsecond)
		mr1.waitFor(3000, 10*time.Second)
		mr1.close()
		if st := mr1.m.Stats(); st.Resets != 1 || st.Records != 3000 || st.Gaps != 0 || st.Next != 3001 {
			t.Fatalf("first run %+v", st)
		}

		src.push(int(away))
		src.drained()                                                    // else the stream may still carry the tail of away to mr2
		lost := src.w.Ring().Oldest() - min(src.w.Ring().Oldest(), 3001) // overwritten while away
		mr2 := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		mr2.connected()
		// The catch-up first: records pushed during it would lap more of
		// what it has still to send (lost would grow with the machine's load).
		mr2.waitFor(3000+away, 10*time.Second)
		src.pushPaced(1000, 50, 200*time.Microsecond)
		w := 4000 + away
		mr2.waitFor(w, 10*time.Second)
		mr2.close()
		st := mr2.m.Stats()
		// What the mirror missed while away comes over TCP: as history, or,
		// for what the datagram stream had already sent when the mirror
		// joined, as NAK answers (timing decides which).
		if st.Resets != 0 || st.Next != w+1 || st.Records != w-3000-lost || st.CatchUp+st.Retransmitted < away-lost {
			t.Fatalf("second run %+v, want the ring continued at %d without a reset", st, 3001+lost)
		}
		if st.Gaps != lost {
			t.Fatalf("second run: %d gaps, but records 3001..%d were lost to the mirror: %+v", st.Gaps, 3000+lost, st)
		}
		ringHolds(t, mcfg.Ring, max(w, 8192)-8191, w)
		sameSlots(t, src.path, mcfg.Ring, 1)
	})
}

// TestResumeAheadOfRestartedSource: the source ring is recreated with fewer
// records than the mirror holds; the reconnecting FromResume mirror gets a
// RESET, starts a fresh ring and ends identical to the new source. In the
// more-records variants the new ring holds more than the mirror did: only
// the session byte tells the datagram mirrors that the source restarted
// (TCP has none), and they must still end identical to the new source.
func TestResumeAheadOfRestartedSource(t *testing.T) {
	eachMode(t, append(allModes, "multicast/more-records", "unicast/more-records"), func(t *testing.T, mode string) {
		base, more := strings.CutSuffix(mode, "/more-records")
		n := uint64(1000) // records of the restarted source
		if more {
			n = 5000
		}
		p, src := pairSource(t, 4096)
		src.push(3000)
		scfg, mcfg := transportConfigs(base)
		srv := src.serve(scfg)
		bind, session := src.srv.Addr().String(), srv.Session()
		mcfg.From = replica.From{Mode: replica.FromResume}
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		if st := mr.waitFor(3000, 10*time.Second); st.Resets != 1 {
			t.Fatalf("first ring: %+v", st)
		}

		// The source restarts on a fresh ring, in a new session.
		src.close()
		if err := src.w.Close(); err != nil {
			t.Fatal(err)
		}
		w, err := shm.Create(src.path, shm.RingConfig{PayloadSize: recordSize, Capacity: 4096}, shm.CreateOptions{Replace: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		src.w = w
		src.push(int(n))
		scfg.Bind = bind // the mirror reconnects to the same address
		for src.serve(scfg).Session() == session {
			src.close() // one chance in 256: the session byte must change
		}

		mr.waitStats("reset", 10*time.Second, func(st replica.MirrorStats) bool {
			return st.Resets == 2 && st.Next > n
		})
		src.pushPaced(500, 50, 200*time.Microsecond)
		mr.waitFor(n+500, 10*time.Second)
		mr.close()
		st := mr.m.Stats()
		if st.Resets != 2 || st.Next != n+501 || st.Gaps != 0 || st.Connects < 2 {
			t.Fatalf("after the restart %+v", st)
		}
		sameSlots(t, src.path, mr.path, 1)
		expectSeqs(t, mr.path, max(n+500, 4096)-4095, n+500, 0) // a fresh mirror ring
	})
}

// TestLappedSourceNoTornRecords: a 64-slot source ring written flat out is
// mirrored over TCP and multicast; every record any mirror ever holds is
// whole, sequences only increase, and every sequence is either written or
// counted as a gap.
func TestLappedSourceNoTornRecords(t *testing.T) {
	p, src := pairSource(t, 64)
	src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	mirrors := map[string]*mirror{
		"tcp":       startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{TCPOnly: true, From: fromOldest}, nil),
		"multicast": startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{From: fromOldest}, nil),
	}
	checkers := map[string]*liveReader{}
	for name, mr := range mirrors {
		mr.connected()
		checkers[name] = readLive(t, mr.path)
	}
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond && src.w.Next() <= 300_000 {
		src.push(256)
	}
	w := src.w.Ring().WriteSeq()
	for name, mr := range mirrors {
		mr.waitFor(w, 15*time.Second)
		n, lapped, _ := checkers[name].stop(t)
		mr.close()
		st := mr.m.Stats()
		t.Logf("%s: %d records pushed; mirror wrote %d, gaps %d, naks %d; checker read %d, lapped %d",
			name, w, st.Records, st.Gaps, st.NaksSent, n, lapped)
		if n == 0 || st.Next != w+1 || st.Records+st.Gaps != w || st.Resets != 1 {
			t.Fatalf("%s: stats %+v, checker %d records", name, st, n)
		}
		ringHolds(t, mr.path, w-63, w)
		sameSlots(t, src.path, mr.path, 1)
	}
}

// TestMulticastLiveDelivery: two mirrors on a bridged LAN take the live
// stream from one multicast sender: one datagram per frame, whatever the
// number of mirrors, each mirror receiving all of them.
func TestMulticastLiveDelivery(t *testing.T) {
	l, src := lanSource(t, 3, 8192)
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	var mirrors []*mirror
	for i := 1; i <= 2; i++ {
		mirrors = append(mirrors, startMirror(t, l.Hosts[i], l.Addrs[i], src, replica.MirrorConfig{}, nil))
	}
	before := make([]replica.MirrorStats, len(mirrors))
	for i, mr := range mirrors {
		before[i] = mr.connected()
	}
	s0 := srv.Stats()
	src.pushPaced(6000, 100, 500*time.Microsecond)
	for _, mr := range mirrors {
		mr.waitFor(6000, 10*time.Second)
	}
	// The server counts a batch after its send call returns, which can be
	// after the mirrors already have it.
	waitUntil(t, 5*time.Second, "the server to count 6000 records sent over UDP", func() bool { return srv.Stats().Records >= 6000 })
	s1 := srv.Stats()
	// What s1 counts was sent; wait until (all but the tolerated 5% of)
	// it has been received.
	dgramsSent := s1.Datagrams - s0.Datagrams
	waitUntil(t, 5*time.Second, "the mirrors to receive the datagrams sent", func() bool {
		for i, mr := range mirrors {
			if mr.m.Stats().Datagrams-before[i].Datagrams < dgramsSent-dgramsSent/20 {
				return false
			}
		}
		return true
	})
	var after []replica.MirrorStats
	for _, mr := range mirrors {
		after = append(after, mr.m.Stats())
		mr.close()
	}
	frames, dgrams, hbs := s1.Frames-s0.Frames, s1.Datagrams-s0.Datagrams, s1.Heartbeats-s0.Heartbeats
	t.Logf("server: %d frames, %d datagrams, %d heartbeats, %d records over UDP, %d over TCP", frames, dgrams, hbs, s1.Records, s1.TCPRecord)
	if s1.Mirrors != 2 || s1.Records != 6000 || frames == 0 || dgrams < frames || dgrams > frames+hbs {
		t.Fatalf("server sent %d datagrams for %d frames (+%d heartbeats): not one per frame; %+v", dgrams, frames, hbs, s1)
	}
	for i, mr := range mirrors {
		st := mr.m.Stats()
		got := after[i].Datagrams - before[i].Datagrams
		if got < dgrams-dgrams/20 || st.Gaps != 0 || st.Records != 6000 || st.Transport != "udp multicast" {
			t.Fatalf("mirror %d received %d of the %d datagrams sent: %+v", i+1, got, dgrams, st)
		}
		if udp := st.Records - st.CatchUp - st.Retransmitted; udp < 5900 {
			t.Fatalf("mirror %d wrote only %d records from datagrams: %+v", i+1, udp, st)
		}
		sameSlots(t, src.path, mr.path, 1)
	}
}
