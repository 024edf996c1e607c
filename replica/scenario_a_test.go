package replica_test

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// Scenario tests (part A): start modes, resume, restarted sources, lapping
// and multicast fan-out. Helpers are prefixed "sa" to stay out of the way
// of the other test files of this package.

var (
	saModes    = []string{"tcp", "multicast", "unicast"}
	saUDPModes = []string{"multicast", "unicast"}
)

// saWaitMirror polls the mirror's stats until ok holds, failing after timeout.
func saWaitMirror(t *testing.T, mr *mirror, what string, timeout time.Duration, ok func(replica.MirrorStats) bool) replica.MirrorStats {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := mr.m.Stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %v: %+v", what, timeout, st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// saConnected waits for the mirror's first completed handshake.
func saConnected(t *testing.T, mr *mirror) replica.MirrorStats {
	t.Helper()
	return saWaitMirror(t, mr, "first connection", 10*time.Second, func(st replica.MirrorStats) bool { return st.Connects > 0 })
}

// saContiguous checks that seqs is exactly first..last.
func saContiguous(t *testing.T, seqs []uint64, first, last uint64) {
	t.Helper()
	if uint64(len(seqs)) != last-first+1 || seqs[0] != first || seqs[len(seqs)-1] != last {
		t.Fatalf("ring holds %d records %v...%v, want exactly %d..%d", len(seqs), seqs[:min(len(seqs), 3)], seqs[max(len(seqs)-3, 0):], first, last)
	}
}

// saLogEvents logs the mirror connections the source saw end in an error.
func saLogEvents(t *testing.T) func(replica.Event) {
	start := time.Now()
	return func(e replica.Event) {
		if e.Kind != replica.EventConnected && e.Err != nil && !errors.Is(e.Err, net.ErrClosed) {
			t.Logf("source, after %v: mirror %v %v: %v", time.Since(start).Round(time.Millisecond), e.Peer, e.Kind, e.Err)
		}
	}
}

// saOneConnection fails the test if the mirror had to reconnect: a loss
// the protocol repairs must not cost the connection (the events logged by
// saLogEvents say why the source ended it).
func saOneConnection(t *testing.T, st replica.MirrorStats) {
	t.Helper()
	if st.Connects != 1 {
		t.Fatalf("mirror connected %d times: the source dropped the connection; %+v", st.Connects, st)
	}
}

// TestLateMirrorFromOldest: a mirror joins a source holding several TCP
// frames of history with FromOldest while the source keeps pushing; it
// ends identical from the oldest retained record, without gaps. (The ring
// does not lap during the join: on a full ring written meanwhile, the
// oldest record named in GEOMETRY may be overwritten before it is read, a
// legitimate GAP.)
func TestLateMirrorFromOldest(t *testing.T) {
	netns.Require(t)
	for _, mode := range saModes {
		t.Run(mode, func(t *testing.T) {
			p := netns.NewPair(t)
			src := newSource(t, p.A, p.AAddr, 8192)
			src.push(6000) // five 64 KiB TCP frames of history
			scfg, mcfg := transportConfigs(mode)
			src.serve(scfg)
			mcfg.From = replica.From{Mode: replica.FromOldest}
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			joined := false // seen connected while the source pushed
			for range 200 { // ~10k records/s while the mirror joins and catches up
				src.push(10)
				joined = joined || mr.m.Stats().Connects > 0
				time.Sleep(500 * time.Microsecond)
			}
			saConnected(t, mr)
			t.Logf("mirror joined while the source pushed: %v", joined)
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
			seqs, _ := readAll(t, mr.path)
			saContiguous(t, seqs, 1, 8000)
		})
	}
}

// TestLatestMirrorSkipsHistory: a mirror that joins with FromLatest after
// 5000 records starts at the newest one; the history is a hole that a
// reader started at the oldest record skips without waiting, counting it
// as lapped.
func TestLatestMirrorSkipsHistory(t *testing.T) {
	netns.Require(t)
	for _, mode := range saModes {
		t.Run(mode, func(t *testing.T) {
			p := netns.NewPair(t)
			src := newSource(t, p.A, p.AAddr, 8192)
			src.push(5000)
			scfg, mcfg := transportConfigs(mode)
			src.serve(scfg)
			mcfg.From = replica.From{Mode: replica.FromLatest}
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			saWaitMirror(t, mr, "newest record", 10*time.Second, func(st replica.MirrorStats) bool { return st.Next > 5000 })

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
			seqs, lapped := readAll(t, mr.path)
			saContiguous(t, seqs, 5000, 6000)
			if lapped != 4999 {
				t.Fatalf("readAll lapped %d, want 4999", lapped)
			}
		})
	}
}

// TestResumeWithoutDuplicates: a FromResume mirror is stopped, the source
// goes on, and a new FromResume mirror on the same ring continues it:
// every sequence exactly once, no gap, no fresh ring. In the
// lapped-while-away variant the source overwrote the records the mirror
// missed: they must be counted as gaps, as a reconnecting mirror counts
// them.
func TestResumeWithoutDuplicates(t *testing.T) {
	netns.Require(t)
	for _, mode := range append(saModes, "tcp/lapped-while-away") {
		t.Run(mode, func(t *testing.T) {
			base, lapped := strings.CutSuffix(mode, "/lapped-while-away")
			away := uint64(2000) // records pushed while no mirror runs
			if lapped {
				away = 12000
			}
			p := netns.NewPair(t)
			src := newSource(t, p.A, p.AAddr, 8192)
			src.push(2000)
			scfg, mcfg := transportConfigs(base)
			src.serve(scfg)
			mcfg.From = replica.From{Mode: replica.FromResume}
			mcfg.Ring = filepath.Join(t.TempDir(), "mirror")

			mr1 := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			saConnected(t, mr1)
			src.pushPaced(1000, 50, 200*time.Microsecond)
			mr1.waitFor(3000, 10*time.Second)
			mr1.close()
			if st := mr1.m.Stats(); st.Resets != 1 || st.Records != 3000 || st.Gaps != 0 || st.Next != 3001 {
				t.Fatalf("first run %+v", st)
			}

			src.push(int(away))
			lost := src.w.Ring().Oldest() - min(src.w.Ring().Oldest(), 3001) // overwritten while away
			mr2 := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			saConnected(t, mr2)
			src.pushPaced(1000, 50, 200*time.Microsecond)
			w := 4000 + away
			mr2.waitFor(w, 10*time.Second)
			mr2.close()
			st := mr2.m.Stats()
			if st.Resets != 0 || st.Next != w+1 || st.Records != w-3000-lost || st.CatchUp < away-lost {
				t.Fatalf("second run %+v, want the ring continued at %d without a reset", st, 3001+lost)
			}
			if st.Gaps != lost {
				t.Fatalf("second run: %d gaps, but records 3001..%d were lost to the mirror: %+v", st.Gaps, 3000+lost, st)
			}
			seqs, _ := readAll(t, mcfg.Ring)
			saContiguous(t, seqs, max(w, 8192)-8191, w)
			sameSlots(t, src.path, mcfg.Ring, 1)
		})
	}
}

// TestResumeAheadOfRestartedSource: the source ring is recreated with fewer
// records than the mirror holds; the reconnecting FromResume mirror gets a
// RESET, starts a fresh ring and ends identical to the new source. In the
// more-records variants the new ring holds more than the mirror did: only
// the session byte tells the datagram mirrors that the source restarted
// (TCP has none), and they must still end identical to the new source.
func TestResumeAheadOfRestartedSource(t *testing.T) {
	netns.Require(t)
	for _, mode := range append(saModes, "multicast/more-records", "unicast/more-records") {
		t.Run(mode, func(t *testing.T) {
			base, more := strings.CutSuffix(mode, "/more-records")
			n := uint64(1000) // records of the restarted source
			if more {
				n = 5000
			}
			p := netns.NewPair(t)
			src := newSource(t, p.A, p.AAddr, 4096)
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
			w, err := shm.Create(src.path, shm.RingConfig{PayloadSize: 56, Capacity: 4096}, shm.CreateOptions{Replace: true})
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

			saWaitMirror(t, mr, "reset", 10*time.Second, func(st replica.MirrorStats) bool {
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
			seqs, lapped := readAll(t, mr.path)
			saContiguous(t, seqs, max(n+500, 4096)-4095, n+500)
			if lapped != 0 {
				t.Fatalf("fresh mirror ring: reader lapped %d", lapped)
			}
		})
	}
}

// saCheck reads the ring at path while it is written, checking every record
// it gets (synth checksum, sequence, strictly increasing) until the stop it
// returns is called; stop reports how many it checked and skipped.
func saCheck(t *testing.T, path string) (stop func() (n, lapped uint64)) {
	t.Helper()
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	var halt atomic.Bool
	var n, lapped uint64
	done := make(chan error, 1)
	go func() {
		defer rd.Close()
		buf := make([]byte, rd.Ring().Layout().PayloadSize())
		var last uint64
		for {
			seq, ok := rd.TryRecv(buf)
			switch got, _, err := synth.Check(buf); {
			case !ok && halt.Load():
				lapped = rd.Lapped()
				done <- nil
				return
			case !ok:
				time.Sleep(50 * time.Microsecond)
			case err != nil || got != seq || seq <= last:
				done <- fmt.Errorf("record %d (after %d) carries %d: %v", seq, last, got, err)
				return
			default:
				last = seq
				n++
			}
		}
	}()
	return func() (uint64, uint64) {
		t.Helper()
		halt.Store(true)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("checker did not stop")
		}
		return n, lapped
	}
}

// TestLappedSourceNoTornRecords: a 64-slot source ring written flat out is
// mirrored over TCP and multicast; every record any mirror ever holds is
// whole, sequences only increase, and every sequence is either written or
// counted as a gap.
func TestLappedSourceNoTornRecords(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	src := newSource(t, p.A, p.AAddr, 64)
	src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	from := replica.From{Mode: replica.FromOldest}
	mirrors := map[string]*mirror{
		"tcp":       startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{TCPOnly: true, From: from}, nil),
		"multicast": startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{From: from}, nil),
	}
	checkers := map[string]func() (uint64, uint64){}
	for name, mr := range mirrors {
		saConnected(t, mr)
		checkers[name] = saCheck(t, mr.path)
	}
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond && src.w.Next() <= 300_000 {
		src.push(256)
	}
	w := src.w.Ring().WriteSeq()
	for name, mr := range mirrors {
		mr.waitFor(w, 15*time.Second)
		n, lapped := checkers[name]()
		mr.close()
		st := mr.m.Stats()
		t.Logf("%s: %d records pushed; mirror wrote %d, gaps %d, naks %d; checker read %d, lapped %d",
			name, w, st.Records, st.Gaps, st.NaksSent, n, lapped)
		if n == 0 || st.Next != w+1 || st.Records+st.Gaps != w || st.Resets != 1 {
			t.Fatalf("%s: stats %+v, checker %d records", name, st, n)
		}
		seqs, _ := readAll(t, mr.path)
		saContiguous(t, seqs, w-63, w)
		sameSlots(t, src.path, mr.path, 1)
	}
}

// TestMulticastLiveDelivery: two mirrors on a bridged LAN take the live
// stream from one multicast sender: one datagram per frame, whatever the
// number of mirrors, each mirror receiving all of them.
func TestMulticastLiveDelivery(t *testing.T) {
	netns.Require(t)
	l := netns.NewLAN(t, 3)
	src := newSource(t, l.Hosts[0], l.Addrs[0], 8192)
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	var mirrors []*mirror
	for i := 1; i <= 2; i++ {
		mirrors = append(mirrors, startMirror(t, l.Hosts[i], l.Addrs[i], src, replica.MirrorConfig{}, nil))
	}
	before := make([]replica.MirrorStats, len(mirrors))
	for i, mr := range mirrors {
		before[i] = saConnected(t, mr)
	}
	s0 := srv.Stats()
	src.pushPaced(6000, 100, 500*time.Microsecond)
	for _, mr := range mirrors {
		mr.waitFor(6000, 10*time.Second)
	}
	s1 := srv.Stats()
	time.Sleep(20 * time.Millisecond) // what s1 counts has arrived
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
