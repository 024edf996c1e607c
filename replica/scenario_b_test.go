package replica_test

// Scenario tests (part B): unicast duplicates, hubs serving a mirror ring
// again, a multicast LAN, and NAKs of records the source overwrote.

import (
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// serveMirror serves a mirror's ring again from ns (a hub). The mirror
// ring must exist (the mirror has connected).
func serveMirror(t *testing.T, ns *netns.NS, addr netip.Addr, mr *mirror, cfg replica.ServerConfig) *source {
	t.Helper()
	hub := &source{tb: t, ns: ns, addr: addr, path: mr.path}
	hub.serve(cfg)
	t.Cleanup(hub.close)
	return hub
}

func TestUnicastDuplicatesDropped(t *testing.T) {
	p, src := pairSource(t, 8192)
	src.serve(replica.ServerConfig{UDPPort: 7403, Dup: 2})
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{Unicast: true, From: fromOldest}, nil)
	waitDatagrams(t, mr)
	const n = 5000
	src.pushPaced(n, 50, 200*time.Microsecond)
	mr.waitFor(n, 10*time.Second)
	// The second copy of the last frames may still be on its way.
	poll(time.Second, 5*time.Millisecond, func() bool { return mr.m.Stats().Duplicates >= src.srv.Stats().Frames })
	sst, st := finish(t, src.srv, mr)
	sameSlots(t, src.path, mr.path, 1)
	wantAll(t, st, n, "udp unicast")
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
	for _, tc := range []struct {
		name, mode string
		hub        replica.From
	}{{"oldest", "unicast", fromOldest}, {"late", "unicast", replica.From{Mode: replica.FromLatest}},
		{"xdp-oldest", "xdp-unicast", fromOldest}, {"xdp-late", "xdp-unicast", replica.From{Mode: replica.FromLatest}}} {
		t.Run(tc.name, func(t *testing.T) {
			lan, src := lanSource(t, 3, 8192)
			src.push(1000)
			scfg, mcfg := transportConfigs(tc.mode)
			src.serve(scfg)
			mcfg.From = tc.hub
			hubM := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, mcfg, nil)
			hubM.waitFor(1000, 10*time.Second) // the hub ring exists
			hubFirst := uint64(1)
			if tc.hub.Mode == replica.FromLatest {
				hubFirst = 1000
			}
			scfg.UDPPort = 7404
			hub := serveMirror(t, lan.Hosts[1], lan.Addrs[1], hubM, scfg)
			mcfg.From = fromOldest
			leaf := startMirror(t, lan.Hosts[2], lan.Addrs[2], hub, mcfg, nil)
			src.pushPaced(2000, 40, 200*time.Microsecond)
			waitDatagrams(t, leaf)
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
			expectSeqs(t, leaf.path, hubFirst, last, hubFirst-1)
			if lst.Gaps != hubFirst-1 || lst.Records != last-hubFirst+1 {
				t.Fatalf("leaf wrote %d records and skipped %d, want %d and %d", lst.Records, lst.Gaps, last-hubFirst+1, hubFirst-1)
			}
			if hsrv.Frames == 0 || lst.Transport != transportLabel(tc.mode) || lst.Connects != 1 {
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

// TestHubResumedHoleReachesLiveLeaf: a hub that is gone while the source
// laps its ring resumes with a hole in its mirror ring; a leaf that is
// live on UDP meanwhile gets that hole as a GAP, in order.
func TestHubResumedHoleReachesLiveLeaf(t *testing.T) {
	lan, src := lanSource(t, 3, 4096)
	src.push(1000)
	src.serve(replica.ServerConfig{UDPPort: 7403})
	hubRing := filepath.Join(t.TempDir(), "hub")
	hubCfg := replica.MirrorConfig{Ring: hubRing, Unicast: true, From: fromOldest}
	hubM := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, hubCfg, nil)
	hubM.waitFor(1000, 10*time.Second)
	hub := serveMirror(t, lan.Hosts[1], lan.Addrs[1], hubM, replica.ServerConfig{UDPPort: 7404})
	leaf := startMirror(t, lan.Hosts[2], lan.Addrs[2], hub, replica.MirrorConfig{Unicast: true, From: fromOldest}, nil)
	waitDatagrams(t, leaf)
	src.pushPaced(1000, 40, 200*time.Microsecond)
	leaf.waitFor(2000, 10*time.Second)
	reader := readLive(t, leaf.path)
	hubM.close()
	src.push(6000) // the source laps: 2001..3904 are gone when the hub is back
	hubCfg.From = replica.From{Mode: replica.FromResume}
	hubM = startMirror(t, lan.Hosts[1], lan.Addrs[1], src, hubCfg, nil)
	// The hub comes back with 3905..8000, a whole ring: let the leaf and
	// its reader take it before anything laps it.
	leaf.waitFor(8000, 10*time.Second)
	waitUntil(t, 10*time.Second, "the leaf's reader", func() bool { return reader.progress.Load() >= 8000 })
	src.pushPaced(1000, 40, 200*time.Microsecond)
	const last, hole = 9000, 3904 - 2000
	hubM.waitFor(last, 10*time.Second)
	leaf.waitFor(last, 10*time.Second)
	waitUntil(t, 10*time.Second, "the leaf's reader at the last record", func() bool { return reader.progress.Load() >= last })
	read, skipped, lastRead := reader.stop(t)
	hsrv, lst := finish(t, hub.srv, leaf)
	t.Logf("leaf reader: read %d, skipped %d, last %d", read, skipped, lastRead)
	if read != last-hole || skipped != hole || lastRead != last {
		t.Fatalf("leaf reader: read %d, skipped %d, last %d, want %d, %d, %d", read, skipped, lastRead, last-hole, hole, last)
	}
	if lst.Gaps != hole || lst.Records != last-hole || lst.Connects != 1 || lst.Resets != 1 {
		t.Fatalf("leaf wrote %d records and skipped %d, want %d and %d", lst.Records, lst.Gaps, last-hole, hole)
	}
	if hsrv.Gaps == 0 || lst.NaksSent == 0 {
		t.Fatalf("the hole did not come as a NAKed GAP: hub %+v", hsrv)
	}
	sameSlots(t, src.path, leaf.path, 1)
}

// TestMulticastLAN: one source, three mirrors on a bridge, over kernel UDP
// and over AF_XDP at every end.
func TestMulticastLAN(t *testing.T) {
	eachMode(t, []string{"multicast", "xdp-multicast"}, func(t *testing.T, mode string) {
		lan, src := lanSource(t, 4, 8192)
		src.push(1000)
		scfg, mcfg := transportConfigs(mode)
		mcfg.From = fromOldest
		src.serve(scfg)
		var mrs []*mirror
		for i := 1; i < 4; i++ {
			mrs = append(mrs, startMirror(t, lan.Hosts[i], lan.Addrs[i], src, mcfg, nil))
		}
		src.pushPaced(5000, 50, 200*time.Microsecond)
		const last = 6000
		sst := finishAll(t, src, mrs, last, transportLabel(mode))
		// One multicast datagram per frame reached all three mirrors.
		if sst.Frames == 0 || sst.Datagrams > sst.Frames+sst.Heartbeats {
			t.Fatalf("server stats %+v: want one datagram per frame", sst)
		}
	})
}

// TestNakAnswerGapStaysInRange plays a mirror by hand: it NAKs records the
// source ring has overwritten. The answer is a GAP, and that GAP must not
// reach past the range asked for: a mirror holds the datagrams after its
// hole, and a GAP beyond them makes it drop records it has.
func TestNakAnswerGapStaysInRange(t *testing.T) {
	p, src := pairSource(t, 16)
	src.push(10)
	src.serve(replica.ServerConfig{})
	c := dialTCP(t, p.B, src.srv.Addr().String())
	readFrame := frameReader(t, c)
	read := func() wire.Header { // the next frame that is not a heartbeat
		for {
			if h := readFrame(); h.Kind != wire.KindHeartbeat {
				return h
			}
		}
	}
	// follow reads the TCP stream until it has covered every record up to last.
	follow := func(last uint64) {
		for next := uint64(1); next <= last; {
			switch h := read(); h.Kind {
			case wire.KindData:
				next = h.Seq + uint64(h.Count)
			case wire.KindGap:
				next = h.Seq
			default:
				t.Fatalf("unexpected %v", h.Kind)
			}
		}
	}
	if _, err := c.Write(wire.AppendHello(nil, 1, wire.Hello{})); err != nil {
		t.Fatal(err)
	}
	if h := read(); h.Kind != wire.KindGeometry || h.Seq != 1 {
		t.Fatalf("got %v %d, want GEOMETRY 1", h.Kind, h.Seq)
	}
	follow(10)
	src.push(100) // the ring of 16 now holds 95..110 only
	follow(110)
	if _, err := c.Write(wire.AppendNak(nil, 3, 5)); err != nil {
		t.Fatal(err)
	}
	h := read()
	if h.Kind != wire.KindGap {
		t.Fatalf("NAK 3..5 of overwritten records answered with %v %d, want a GAP", h.Kind, h.Seq)
	}
	if h.Seq != 6 {
		t.Fatalf("NAK 3..5 of overwritten records answered with GAP %d: it announces 6..%d lost too, want GAP 6", h.Seq, h.Seq-1)
	}
}
