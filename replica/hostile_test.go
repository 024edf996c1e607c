package replica_test

// Hostile or confused peers: a source whose GEOMETRY asks for too much, a
// third host forging datagrams with the right session byte.

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// A source whose GEOMETRY asks for a ring beyond the mirror's size limit
// is refused: the mirror creates nothing and says why.
func TestGeometryBeyondMaxRingSize(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	l, err := shm.NewLayout(shm.RingConfig{PayloadSize: recordSize, Capacity: 1 << 20}) // 64 MiB
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		_, err := c.Write(wire.AppendGeometry(nil, 1, 0, wire.GeometryOf(l)))
		return err
	})
	m, ring := f.mirror(t, replica.MirrorConfig{MaxRingSize: 1 << 20})
	var cerr error
	p.B.Do(func() error { cerr = m.Connect(context.Background()); return nil })
	if !errors.Is(cerr, shm.ErrTooLarge) {
		t.Fatalf("Connect: %v, want ErrTooLarge", cerr)
	}
	if _, err := os.Stat(ring); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused ring was created: %v", err)
	}
}

// A third host on the LAN forges a HEARTBEAT announcing 2^62 and a DATA
// datagram far ahead, with the right session byte, to a mirror that takes
// datagrams from anyone (AnySource; by default they would be dropped as
// foreign): the mirror drops both (counted), never NAKs them, stays
// connected and keeps the source's bytes.
func TestForgedFarAheadDatagrams(t *testing.T) {
	lan, src := lanSource(t, 3, 1024)
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest, AnySource: true}, nil)
	mr.connected()
	src.push(100)
	mr.waitFor(100, 10*time.Second)
	naks := mr.m.Stats().NaksSent
	forger := newUDPIn(t, lan.Hosts[2], replica.UDPConfig{Iface: lan.Addrs[2]})
	hb := make([]byte, wire.HeaderSize)
	wire.Header{Kind: wire.KindHeartbeat, Flags: srv.Session(), Seq: 1 << 62}.Put(hb)
	ahead := dataFrame(srv.Session(), 1<<40, 1, 1)
	if _, err := forger.SendBatch([]replica.Message{{Buf: hb, Addr: mcastGroup()}, {Buf: ahead, Addr: mcastGroup()}}); err != nil {
		t.Fatal(err)
	}
	mr.waitStats("the forged datagrams dropped", 5*time.Second, func(st replica.MirrorStats) bool { return st.FarAhead >= 2 })
	src.push(100)
	st := mr.waitFor(200, 10*time.Second)
	if st.Connects != 1 || st.Gaps != 0 || st.NaksSent != naks || st.Held != 0 {
		t.Fatalf("after the forged datagrams: %+v (NAKs before %d)", st, naks)
	}
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}

// A third host forges the next DATA datagram with the right session byte:
// the mirror takes datagrams only from its source's address, so the
// forgery is dropped (counted) and the real record is what the ring holds.
func TestForgedNextRecordFromAnotherHost(t *testing.T) {
	lan, src := lanSource(t, 3, 1024)
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	src.push(100)
	mr.waitFor(100, 10*time.Second)
	forger := newUDPIn(t, lan.Hosts[2], replica.UDPConfig{Iface: lan.Addrs[2]})
	forged := dataFrame(srv.Session(), 101, 5, 7) // records 101..105, stamped 7
	if _, err := forger.SendBatch([]replica.Message{{Buf: forged, Addr: mcastGroup()}}); err != nil {
		t.Fatal(err)
	}
	mr.waitStats("the forged datagram dropped", 5*time.Second, func(st replica.MirrorStats) bool { return st.Foreign >= 1 })
	src.push(100)
	st := mr.waitFor(200, 10*time.Second)
	mr.close()
	if st.Connects != 1 || st.Gaps != 0 || st.Foreign == 0 {
		t.Fatalf("after the forged datagram: %+v", st)
	}
	sameSlots(t, src.path, mr.path, 1) // 101..105 are the source's records, not the forgery
}
