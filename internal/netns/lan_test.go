package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"golang.org/x/net/ipv4"
)

func TestLAN(t *testing.T) {
	Require(t)
	before, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	l := NewLAN(t, 3)
	after, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("root namespace interfaces changed: %d before NewLAN, %d after", len(before), len(after))
	}
	out, err := l.Bridge.Exec("ip", "-d", "link", "show", "br0")
	if err != nil || !strings.Contains(out, "mcast_snooping 0") {
		t.Errorf("bridge: %v\n%s", err, out)
	}

	group := net.IPv4(239, 255, 77, 1)
	var conns []net.PacketConn
	for _, i := range []int{1, 2} {
		err := l.Hosts[i].Do(func() error {
			c, err := net.ListenPacket("udp4", "0.0.0.0:7701")
			if err != nil {
				return err
			}
			conns = append(conns, c)
			ifi, err := net.InterfaceByName(l.Ifs[i])
			if err != nil {
				return err
			}
			return ipv4.NewPacketConn(c).JoinGroup(ifi, &net.UDPAddr{IP: group})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	err = l.Hosts[0].Do(func() error {
		c, err := net.ListenPacket("udp4", "0.0.0.0:0")
		if err != nil {
			return err
		}
		defer c.Close()
		ifi, err := net.InterfaceByName(l.Ifs[0])
		if err != nil {
			return err
		}
		pc := ipv4.NewPacketConn(c)
		if err := pc.SetMulticastInterface(ifi); err != nil {
			return err
		}
		_, err = pc.WriteTo([]byte("hello group"), nil, &net.UDPAddr{IP: group, Port: 7701})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		msg, from := recv(t, c)
		if msg != "hello group" || from.(*net.UDPAddr).AddrPort().Addr() != l.Addrs[0] {
			t.Errorf("host %d: got %q from %v", i+1, msg, from)
		}
	}
}

func TestRunExec(t *testing.T) {
	Require(t)
	t.Parallel()
	p := NewPair(t)
	out, err := p.A.Exec("ip", "-br", "addr")
	if err != nil || !strings.Contains(out, p.AAddr.String()+"/24") || strings.Contains(out, p.BAddr.String()) {
		t.Errorf("Exec: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := p.B.Run(ctx, "ip", "-br", "addr").CombinedOutput()
	if err != nil || !strings.Contains(string(b), p.BAddr.String()+"/24") {
		t.Errorf("Run: %v\n%s", err, b)
	}
	if _, err := p.A.Exec("false"); err == nil || !strings.Contains(err.Error(), "ip netns exec "+p.A.Name+" false") {
		t.Errorf("Exec(false) error = %v", err)
	}
}

func TestSetTxChecksum(t *testing.T) {
	Require(t)
	t.Parallel()
	p := NewPair(t)
	err := p.A.SetTxChecksum(p.AIf, false)
	if _, lerr := exec.LookPath("ethtool"); lerr != nil {
		if err == nil || !strings.Contains(err.Error(), "ethtool is missing") {
			t.Fatalf("without ethtool: err = %v", err)
		}
		testenv.Skipf(t, "ethtool not installed: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.A.Exec("ethtool", "-k", p.AIf)
	if err != nil || !strings.Contains(out, "tx-checksumming: off") {
		t.Errorf("ethtool -k: %v\n%s", err, out)
	}
}

func TestSweep(t *testing.T) {
	Require(t)
	stale := prefix + "stale"
	other := fmt.Sprintf("rfx%d-keep", os.Getpid()) // not our prefix
	for _, n := range []string{stale, other} {
		if err := ip("", "netns", "add", n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ip("", "netns", "del", n) })
	}
	sweep()
	l := nsList(t)
	if slices.Contains(l, stale) || !slices.Contains(l, other) {
		t.Errorf("after sweep: %v; want %s gone and %s kept", l, stale, other)
	}
}

func TestTiming(t *testing.T) {
	Require(t)
	for _, tc := range []struct {
		name string
		mk   func(t *testing.T)
	}{
		{"NewPair", func(t *testing.T) { NewPair(t) }},
		{"NewLAN4", func(t *testing.T) { NewLAN(t, 4) }},
	} {
		var setup time.Duration
		start := time.Now()
		t.Run(tc.name, func(t *testing.T) {
			tc.mk(t)
			setup = time.Since(start)
		})
		t.Logf("%s: setup %v, setup+cleanup %v", tc.name, setup, time.Since(start))
	}
}
