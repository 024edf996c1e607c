package replica_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// TestWideSessionMixed: a unicast source serves a mirror that takes the
// wide session and a version-1 mirror side by side: one batch, the
// trailer only where it was asked for; both rings identical.
func TestWideSessionMixed(t *testing.T) {
	lan, src := lanSource(t, 3, 1<<14)
	srv := src.serve(replica.ServerConfig{UDPPort: 7403})
	wl, vl := &lengths{}, &lengths{}
	wcfg := replica.MirrorConfig{Unicast: true, From: fromOldest}
	wcfg.NewTransport = wrapMirrorUDP(func(tr replica.Transport) replica.Transport { wl.Transport = tr; return wl })
	vcfg := replica.MirrorConfig{Unicast: true, From: fromOldest, NoSession64: true}
	vcfg.NewTransport = wrapMirrorUDP(func(tr replica.Transport) replica.Transport { vl.Transport = tr; return vl })
	wide := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, wcfg, nil)
	v1 := startMirror(t, lan.Hosts[2], lan.Addrs[2], src, vcfg, nil)
	wide.connected()
	v1.connected()
	waitDatagrams(t, wide, v1)
	src.pushPaced(3000, 50, time.Millisecond)
	finishAll(t, src, []*mirror{wide, v1}, 3000, "udp unicast")
	t.Logf("server %+v", srv.Stats())
	// Records are 56 bytes: a frame is 16 + 56k bytes, 8 more with the id.
	if wl.with.Load() == 0 || wl.without.Load() != 0 || vl.with.Load() != 0 || vl.without.Load() == 0 {
		t.Fatalf("datagrams with and without the id: wide %d/%d, version 1 %d/%d",
			wl.with.Load(), wl.without.Load(), vl.with.Load(), vl.without.Load())
	}
}

// lengths counts the datagrams received with and without the 8-byte
// session trailer (56-byte records).
type lengths struct {
	replica.Transport
	with, without atomic.Uint64
}

func (l *lengths) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	k, err := l.Transport.RecvBatch(ms, wait)
	for i := range k {
		switch (ms[i].N - 16) % recordSize {
		case 8:
			l.with.Add(1)
		case 0:
			l.without.Add(1)
		}
	}
	return k, err
}

// TestWideMulticast: with WideMulticast the group's datagrams end with
// the 64-bit session id. A forged datagram with the right session byte and
// the next sequence, sent to the group from another host, is dropped by a
// mirror that takes datagrams from anyone (AnySource): it lacks the id
// (OtherSession); a version-1 mirror is served over TCP, never given
// datagrams it cannot parse.
func TestWideMulticast(t *testing.T) {
	lan, src := lanSource(t, 4, 1<<14)
	srv := src.serve(replica.ServerConfig{Multicast: mcastGroup(), WideMulticast: true})
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest, AnySource: true}, nil)
	v1 := startMirror(t, lan.Hosts[3], lan.Addrs[3], src, replica.MirrorConfig{From: fromOldest, NoSession64: true}, nil)
	mr.connected()
	v1.connected()
	waitDatagrams(t, mr)
	src.push(100)
	mr.waitFor(100, 10*time.Second)
	forger := newUDPIn(t, lan.Hosts[2], replica.UDPConfig{Iface: lan.Addrs[2]})
	plain := dataFrame(srv.Session(), 101, 5, 7)
	guessed := binary.LittleEndian.AppendUint64(dataFrame(srv.Session(), 101, 5, 7), 0x0123456789abcdef)
	for _, b := range [][]byte{plain, guessed} {
		if _, err := forger.SendBatch([]replica.Message{{Buf: b, Addr: mcastGroup()}}); err != nil {
			t.Fatal(err)
		}
	}
	mr.waitStats("the forgeries dropped", 5*time.Second, func(st replica.MirrorStats) bool { return st.OtherSession >= 2 })
	src.pushPaced(2000, 50, time.Millisecond)
	finishAll(t, src, []*mirror{mr}, 2100, "udp multicast")
	v1.waitFor(2100, 10*time.Second)
	v1.close()
	if st := v1.m.Stats(); st.Transport != "tcp" || st.Datagrams != 0 {
		t.Fatalf("the version-1 mirror of a wide multicast source: %+v", st)
	}
	sameSlots(t, src.path, v1.path, 1)
}
