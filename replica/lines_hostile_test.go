package replica_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// A source that announces line B where it may not (to a mirror that did
// not ask, without a multicast line A), or sends a line B MULTICAST that
// is not a group of line A's session and MTU, is refused with an error
// saying why; nothing is created and the fault is counted.
func TestLinesHostileSourceRefused(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	g := wire.GeometryOf(hsLayout(t, shm.RingConfig{PayloadSize: 56, Capacity: 1024}))
	lineA := wire.Multicast{Group: [4]byte{239, 255, 0, 1}, Port: 7401, MTU: 1472, TTL: 1, Session: 7}
	lineB := lineA
	lineB.Group, lineB.Port = [4]byte{239, 255, 1, 1}, 7501
	uni, other := lineB, lineB
	uni.Group = [4]byte{}
	other.Session = 8
	for _, tc := range []struct {
		name  string
		asked bool
		flags uint8
		a     wire.Multicast
		next  []byte // what follows line A's MULTICAST
		want  string
	}{
		{"not asked", false, wire.GeometryMulticast | wire.GeometryLines, lineA, wire.AppendMulticast(nil, lineB), "did not ask"},
		{"unicast line A", true, wire.GeometryMulticast | wire.GeometryLines, uni, wire.AppendMulticast(nil, lineB), "without a multicast line A"},
		{"no MULTICAST", true, wire.GeometryMulticast | wire.GeometryLines, lineA, wire.AppendEmpty(nil, wire.KindHeartbeat, 0, 1), "expected line B's MULTICAST"},
		{"unicast line B", true, wire.GeometryMulticast | wire.GeometryLines, lineA, wire.AppendMulticast(nil, uni), "not a group of line A's session"},
		{"other session", true, wire.GeometryMulticast | wire.GeometryLines, lineA, wire.AppendMulticast(nil, other), "not a group of line A's session"},
	} {
		f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
			b := wire.AppendGeometry(nil, 1, tc.flags, g)
			b = wire.AppendMulticast(b, tc.a)
			if _, err := c.Write(append(b, tc.next...)); err != nil {
				return err
			}
			hsDrain(c)
			return nil
		})
		cfg := replica.MirrorConfig{Source: f.ln.Addr().String(), Ring: filepath.Join(t.TempDir(), "mirror"), Once: true}
		if tc.asked {
			cfg.IfaceB = p.BAddr
		}
		m, err := replica.NewMirror(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		p.B.Do(func() error { err = m.Connect(context.Background()); return nil })
		if !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Connect: %v, want wire.ErrMalformed saying %q", tc.name, err, tc.want)
		}
		if _, serr := os.Stat(cfg.Ring); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the refused mirror ring was created: %v", tc.name, serr)
		}
		if st := m.Stats(); st.SourceErrors != 1 {
			t.Errorf("%s: stats %+v, want 1 source error", tc.name, st)
		}
	}
}

// A bad line B configuration is refused by NewServer with an error
// wrapping ErrLines; a line B transport that cannot open fails NewServer
// naming line B.
func TestLinesServerConfigRefused(t *testing.T) {
	ring := filepath.Join(shmDir(t), "src")
	w, err := shm.Create(ring, shm.RingConfig{PayloadSize: 56, Capacity: 1024}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	gA := netip.MustParseAddrPort("239.255.0.1:7401")
	for _, c := range []struct {
		name string
		cfg  replica.ServerConfig
	}{
		{"no line A", replica.ServerConfig{MulticastB: groupB}},
		{"not a group", replica.ServerConfig{Multicast: gA, MulticastB: netip.MustParseAddrPort("10.0.0.1:7401")}},
		{"line A's group", replica.ServerConfig{Multicast: gA, MulticastB: gA}},
		{"IfaceB alone", replica.ServerConfig{Multicast: gA, IfaceB: netip.MustParseAddr("10.0.0.1")}},
	} {
		c.cfg.Ring, c.cfg.Bind = ring, "127.0.0.1:0"
		if _, err := replica.NewServer(c.cfg); !errors.Is(err, replica.ErrLines) {
			t.Errorf("%s: NewServer: %v, want ErrLines", c.name, err)
		}
	}
	broken := errors.New("no such NIC")
	_, err = replica.NewServer(replica.ServerConfig{Ring: ring, Bind: "127.0.0.1:0", Multicast: gA, MulticastB: groupB,
		NewTransportB: func(replica.UDPConfig) (replica.Transport, error) { return nil, broken }})
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "line B") {
		t.Errorf("NewServer with a line B that cannot open: %v", err)
	}
}
