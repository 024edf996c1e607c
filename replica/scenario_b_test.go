package replica_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// sbConfigs returns the server and mirror settings of a transport mode.
func sbConfigs(mode string) (replica.ServerConfig, replica.MirrorConfig) {
	switch mode {
	case "multicast":
		return replica.ServerConfig{Multicast: mcastGroup()}, replica.MirrorConfig{}
	case "unicast":
		return replica.ServerConfig{UDPPort: 7403}, replica.MirrorConfig{Unicast: true}
	}
	return replica.ServerConfig{}, replica.MirrorConfig{TCPOnly: true}
}

// sbWaitUntil polls cond every 2 ms until it holds or timeout passes.
func sbWaitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sbWaitDatagrams waits until every mirror receives datagrams (a unicast
// mirror has punched, a multicast mirror has joined the group).
func sbWaitDatagrams(t *testing.T, mrs ...*mirror) {
	t.Helper()
	for _, mr := range mrs {
		sbWaitUntil(t, 10*time.Second, "datagrams at the mirror", func() bool { return mr.m.Stats().Datagrams > 0 })
	}
}

// sbServeMirror serves a mirror's ring again from ns (a hub). The mirror
// ring must exist (the mirror has connected).
func sbServeMirror(t *testing.T, ns *netns.NS, addr netip.Addr, mr *mirror, cfg replica.ServerConfig) *source {
	t.Helper()
	hub := &source{t: t, ns: ns, addr: addr, path: mr.path}
	hub.serve(cfg)
	t.Cleanup(hub.close)
	return hub
}

// sbExpectSeqs checks that the ring at path holds exactly first..last, in
// order, every record whole, and that a reader from the oldest skips
// `skipped` records (holes of a sparse ring) before first.
func sbExpectSeqs(t *testing.T, path string, first, last, skipped uint64) {
	t.Helper()
	seqs, lapped := readAll(t, path)
	if uint64(len(seqs)) != last-first+1 || seqs[0] != first || seqs[len(seqs)-1] != last {
		t.Fatalf("ring holds %d records %v..%v, want %d..%d", len(seqs), seqs[:min(1, len(seqs))], seqs[max(0, len(seqs)-1):], first, last)
	}
	if lapped != skipped {
		t.Fatalf("a reader from the oldest skipped %d records, want %d", lapped, skipped)
	}
}

func TestUnicastDuplicatesDropped(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	src := newSource(t, p.A, p.AAddr, 8192)
	src.serve(replica.ServerConfig{UDPPort: 7403, Dup: 2})
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{Unicast: true, From: replica.From{Mode: replica.FromOldest}}, nil)
	sbWaitDatagrams(t, mr)
	const n = 5000
	src.pushPaced(n, 50, 200*time.Microsecond)
	mr.waitFor(n, 10*time.Second)
	// The second copy of the last frames may still be on its way.
	want := func() bool { return mr.m.Stats().Duplicates >= src.srv.Stats().Frames }
	deadline := time.Now().Add(time.Second)
	for !want() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	sst := src.srv.Stats()
	mr.close()
	st := mr.m.Stats()
	sameSlots(t, src.path, mr.path, 1)
	t.Logf("server %+v", sst)
	t.Logf("mirror %+v", st)
	if st.Records != n || st.Gaps != 0 || st.Transport != "udp unicast" {
		t.Fatalf("mirror stats %+v", st)
	}
	if sst.Frames == 0 || sst.Records < n*9/10 {
		t.Fatalf("the live stream did not go by UDP: %+v", sst)
	}
	// Every DATA frame went out twice; heartbeats are sent once.
	if sst.Datagrams < 2*sst.Frames || sst.Datagrams > 2*sst.Frames+sst.Heartbeats {
		t.Fatalf("server sent %d datagrams for %d frames (%d heartbeats), want 2 per frame", sst.Datagrams, sst.Frames, sst.Heartbeats)
	}
	// One copy of every frame is a duplicate the mirror dropped.
	if st.Duplicates == 0 || st.Duplicates < sst.Frames*9/10 || st.Duplicates > sst.Frames*11/10 {
		t.Fatalf("mirror dropped %d duplicates of %d frames sent twice", st.Duplicates, sst.Frames)
	}
	if udp := st.Frames - sst.TCPFrames; udp < 2*sst.Frames*9/10 {
		t.Fatalf("mirror received %d DATA datagrams, server sent %d frames twice", udp, sst.Frames)
	}
}

func TestHubServesMirrorAgain(t *testing.T) {
	netns.Require(t)
	oldest := replica.From{Mode: replica.FromOldest}
	for _, tc := range []struct {
		name string
		hub  replica.From
	}{{"oldest", oldest}, {"late", replica.From{Mode: replica.FromLatest}}} {
		t.Run(tc.name, func(t *testing.T) {
			lan := netns.NewLAN(t, 3)
			src := newSource(t, lan.Hosts[0], lan.Addrs[0], 8192)
			src.push(1000)
			src.serve(replica.ServerConfig{UDPPort: 7403})
			hubM := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{Unicast: true, From: tc.hub}, nil)
			hubM.waitFor(1000, 10*time.Second) // the hub ring exists
			hubFirst := uint64(1)
			if tc.hub.Mode == replica.FromLatest {
				hubFirst = 1000
			}
			hub := sbServeMirror(t, lan.Hosts[1], lan.Addrs[1], hubM, replica.ServerConfig{UDPPort: 7404})
			leaf := startMirror(t, lan.Hosts[2], lan.Addrs[2], hub, replica.MirrorConfig{Unicast: true, From: oldest}, nil)
			src.pushPaced(2000, 40, 200*time.Microsecond)
			sbWaitDatagrams(t, leaf)
			src.pushPaced(2000, 40, 200*time.Microsecond)
			const last = 5000
			hst := hubM.waitFor(last, 10*time.Second)
			lst := leaf.waitFor(last, 10*time.Second)
			hsrv := hub.srv.Stats()
			leaf.close()
			lst = leaf.m.Stats()
			hub.close()
			hubM.close()
			t.Logf("hub mirror %+v", hst)
			t.Logf("hub server %+v", hsrv)
			t.Logf("leaf %+v", lst)
			// The leaf holds the source's records under the source's numbers.
			sameSlots(t, src.path, leaf.path, hubFirst)
			sbExpectSeqs(t, leaf.path, hubFirst, last, hubFirst-1)
			if lst.Gaps != hubFirst-1 || lst.Records != last-hubFirst+1 {
				t.Fatalf("leaf wrote %d records and skipped %d, want %d and %d", lst.Records, lst.Gaps, last-hubFirst+1, hubFirst-1)
			}
			if hsrv.Frames == 0 || lst.Transport != "udp unicast" || lst.Connects != 1 {
				t.Fatalf("the hub did not serve the leaf by UDP: server %+v, leaf %+v", hsrv, lst)
			}
			// The hub's hole is a hole on the leaf too, not a record.
			if hubFirst > 1 {
				r, err := shm.Open(leaf.path, shm.OpenOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				buf := make([]byte, r.Layout().PayloadSize())
				for _, seq := range []uint64{1, hubFirst / 2, hubFirst - 1} {
					if st, _ := r.ReadSlot(seq, buf); st != shm.SlotHole {
						t.Fatalf("leaf record %d: %v, want a hole", seq, st)
					}
				}
			}
		})
	}
}

// sbLiveReader reads the ring at path from the oldest record until stop is
// closed, checking that records are whole and in order, and storing the
// last sequence read in progress; it reports how many it read and how many
// it skipped.
func sbLiveReader(path string, stop <-chan struct{}, progress *atomic.Uint64) <-chan error {
	errc := make(chan error, 1)
	go func() {
		rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
		if err != nil {
			errc <- err
			return
		}
		defer rd.Close()
		buf := make([]byte, rd.Ring().Layout().PayloadSize())
		var last, n uint64
		for {
			select {
			case <-stop:
				errc <- fmt.Errorf("read %d, skipped %d, last %d", n, rd.Lapped(), last)
				return
			default:
			}
			seq, err := rd.Recv(buf, 20*time.Millisecond)
			if errors.Is(err, shm.ErrTimeout) {
				continue
			}
			if err != nil {
				errc <- err
				return
			}
			if got, _, err := synth.Check(buf); err != nil || got != seq || seq <= last {
				errc <- fmt.Errorf("record %d after %d carries %d: %v (disorder or damage)", seq, last, got, err)
				return
			}
			last, n = seq, n+1
			progress.Store(seq)
		}
	}()
	return errc
}

// TestHubResumedHoleReachesLiveLeaf: a hub that is gone while the source
// laps its ring resumes with a hole in its mirror ring; a leaf that is
// live on UDP meanwhile gets that hole as a GAP, in order.
func TestHubResumedHoleReachesLiveLeaf(t *testing.T) {
	netns.Require(t)
	lan := netns.NewLAN(t, 3)
	src := newSource(t, lan.Hosts[0], lan.Addrs[0], 4096)
	src.push(1000)
	src.serve(replica.ServerConfig{UDPPort: 7403})
	hubRing := filepath.Join(t.TempDir(), "hub")
	hubCfg := replica.MirrorConfig{Ring: hubRing, Unicast: true, From: replica.From{Mode: replica.FromOldest}}
	hubM := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, hubCfg, nil)
	hubM.waitFor(1000, 10*time.Second)
	hub := sbServeMirror(t, lan.Hosts[1], lan.Addrs[1], hubM, replica.ServerConfig{UDPPort: 7404})
	leaf := startMirror(t, lan.Hosts[2], lan.Addrs[2], hub, replica.MirrorConfig{Unicast: true, From: replica.From{Mode: replica.FromOldest}}, nil)
	sbWaitDatagrams(t, leaf)
	src.pushPaced(1000, 40, 200*time.Microsecond)
	leaf.waitFor(2000, 10*time.Second)
	stop := make(chan struct{})
	var progress atomic.Uint64
	errc := sbLiveReader(leaf.path, stop, &progress)
	hubM.close()
	src.push(6000) // the source laps: 2001..3904 are gone when the hub is back
	hubCfg.From = replica.From{Mode: replica.FromResume}
	hubM = startMirror(t, lan.Hosts[1], lan.Addrs[1], src, hubCfg, nil)
	// The hub comes back with 3905..8000, a whole ring: let the leaf and
	// its reader take it before anything laps it.
	leaf.waitFor(8000, 10*time.Second)
	sbWaitUntil(t, 10*time.Second, "the leaf's reader", func() bool { return progress.Load() >= 8000 })
	src.pushPaced(1000, 40, 200*time.Microsecond)
	const last, hole = 9000, 3904 - 2000
	hubM.waitFor(last, 10*time.Second)
	leaf.waitFor(last, 10*time.Second)
	time.Sleep(50 * time.Millisecond) // the reader takes the last records
	close(stop)
	rerr := <-errc
	hsrv := hub.srv.Stats()
	leaf.close()
	lst := leaf.m.Stats()
	t.Logf("hub server %+v", hsrv)
	t.Logf("leaf %+v", lst)
	t.Logf("leaf reader: %v", rerr)
	if want := fmt.Sprintf("read %d, skipped %d, last %d", last-hole, hole, last); rerr.Error() != want {
		t.Fatalf("leaf reader: %v, want %s", rerr, want)
	}
	if lst.Gaps != hole || lst.Records != last-hole || lst.Connects != 1 || lst.Resets != 1 {
		t.Fatalf("leaf wrote %d records and skipped %d, want %d and %d", lst.Records, lst.Gaps, last-hole, hole)
	}
	if hsrv.Gaps == 0 || lst.NaksSent == 0 {
		t.Fatalf("the hole did not come as a NAKed GAP: hub %+v", hsrv)
	}
	sameSlots(t, src.path, leaf.path, 1)
}

func TestMulticastLAN(t *testing.T) {
	netns.Require(t)
	lan := netns.NewLAN(t, 4)
	src := newSource(t, lan.Hosts[0], lan.Addrs[0], 8192)
	src.push(1000)
	src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	var mrs []*mirror
	for i := 1; i < 4; i++ {
		mrs = append(mrs, startMirror(t, lan.Hosts[i], lan.Addrs[i], src, replica.MirrorConfig{From: replica.From{Mode: replica.FromOldest}}, nil))
	}
	src.pushPaced(5000, 50, 200*time.Microsecond)
	const last = 6000
	for _, mr := range mrs {
		mr.waitFor(last, 10*time.Second)
	}
	sst := src.srv.Stats()
	t.Logf("server %+v", sst)
	for i, mr := range mrs {
		mr.close()
		st := mr.m.Stats()
		t.Logf("mirror %d %+v", i+1, st)
		sameSlots(t, src.path, mr.path, 1)
		if st.Records != last || st.Gaps != 0 || st.Transport != "udp multicast" || st.Connects != 1 {
			t.Fatalf("mirror %d stats %+v", i+1, st)
		}
	}
	// One multicast datagram per frame reached all three mirrors.
	if sst.Frames == 0 || sst.Datagrams > sst.Frames+sst.Heartbeats {
		t.Fatalf("server stats %+v: want one datagram per frame", sst)
	}
}

// TestNakAnswerGapStaysInRange plays a mirror by hand: it NAKs records the
// source ring has overwritten. The answer is a GAP, and that GAP must not
// reach past the range asked for: a mirror holds the datagrams after its
// hole, and a GAP beyond them makes it drop records it has.
func TestNakAnswerGapStaysInRange(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	src := newSource(t, p.A, p.AAddr, 16)
	src.push(10)
	src.serve(replica.ServerConfig{})
	var c net.Conn
	if err := p.B.Do(func() (err error) { c, err = net.Dial("tcp", src.srv.Addr().String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	read := func() replica.Header { // the next frame that is not a heartbeat
		for {
			var hb [replica.HeaderSize]byte
			if _, err := io.ReadFull(br, hb[:]); err != nil {
				t.Fatal(err)
			}
			h, err := replica.ParseHeader(hb[:], 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := br.Discard(int(h.Len)); err != nil {
				t.Fatal(err)
			}
			if h.Kind != replica.KindHeartbeat {
				return h
			}
		}
	}
	// follow reads the TCP stream until it has covered every record up to last.
	follow := func(last uint64) {
		for next := uint64(1); next <= last; {
			switch h := read(); h.Kind {
			case replica.KindData:
				next = h.Seq + uint64(h.Count)
			case replica.KindGap:
				next = h.Seq
			default:
				t.Fatalf("unexpected %v", h.Kind)
			}
		}
	}
	if _, err := c.Write(replica.AppendHello(nil, 1, replica.Hello{})); err != nil {
		t.Fatal(err)
	}
	if h := read(); h.Kind != replica.KindGeometry || h.Seq != 1 {
		t.Fatalf("got %v %d, want GEOMETRY 1", h.Kind, h.Seq)
	}
	follow(10)
	src.push(100) // the ring of 16 now holds 95..110 only
	follow(110)
	if _, err := c.Write(replica.AppendNak(nil, 3, 5)); err != nil {
		t.Fatal(err)
	}
	h := read()
	if h.Kind != replica.KindGap {
		t.Fatalf("NAK 3..5 of overwritten records answered with %v %d, want a GAP", h.Kind, h.Seq)
	}
	if h.Seq != 6 {
		t.Fatalf("NAK 3..5 of overwritten records answered with GAP %d: it announces 6..%d lost too, want GAP 6", h.Seq, h.Seq-1)
	}
}
