package neigh_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/internal/netns"
)

// ipLink is the part of `ip -j -d link show` the tests compare.
type ipLink struct {
	Index   int      `json:"ifindex"`
	Name    string   `json:"ifname"`
	Flags   []string `json:"flags"`
	MTU     int      `json:"mtu"`
	Address string   `json:"address"`
	TxQ     int      `json:"num_tx_queues"`
	RxQ     int      `json:"num_rx_queues"`
}

func showLink(t *testing.T, ns *netns.NS, ifname string) ipLink {
	t.Helper()
	out, err := ns.Exec("ip", "-j", "-d", "link", "show", "dev", ifname)
	if err != nil {
		t.Fatal(err)
	}
	var ls []ipLink
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 {
		t.Fatalf("ip -j link: %v: %s", err, out)
	}
	return ls[0]
}

// in runs fn inside ns, failing the test on error.
func in(t *testing.T, ns *netns.NS, fn func() error) {
	t.Helper()
	if err := ns.Do(fn); err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, ns *netns.NS, args ...string) {
	t.Helper()
	if _, err := ns.Exec(args...); err != nil {
		t.Fatal(err)
	}
}

func TestLinkByNameAndAddr(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	p := netns.NewPair(t)
	want := showLink(t, p.A, p.AIf)
	var byName, byAddr neigh.Link
	var errUnknown, errNoAddr, errV6 error
	in(t, p.A, func() (err error) {
		if byName, err = neigh.LinkByName(p.AIf); err != nil {
			return err
		}
		if byAddr, err = neigh.LinkByAddr(p.AAddr); err != nil {
			return err
		}
		_, errUnknown = neigh.LinkByName("nosuchif0")
		_, errNoAddr = neigh.LinkByAddr(p.BAddr) // the peer's, not ours
		_, errV6 = neigh.LinkByAddr(netip.MustParseAddr("::1"))
		return nil
	})
	if byName.Index != want.Index || byName.Name != want.Name || byName.MAC.String() != want.Address ||
		byName.MTU != want.MTU || byName.TxQueues != want.TxQ || byName.RxQueues != want.RxQ ||
		byName.TxQueues < 1 || byName.RxQueues < 1 || !byName.Up || !slices.Contains(want.Flags, "UP") {
		t.Errorf("LinkByName = %+v\nip link    = %+v", byName, want)
	}
	if wantAddrs := []netip.Prefix{netip.PrefixFrom(p.AAddr, 24)}; !slices.Equal(byName.Addrs, wantAddrs) {
		t.Errorf("Addrs = %v, want %v", byName.Addrs, wantAddrs)
	}
	if byAddr.Index != byName.Index || byAddr.MAC != byName.MAC {
		t.Errorf("LinkByAddr = %+v, want %+v", byAddr, byName)
	}
	if !errors.Is(errUnknown, neigh.ErrNoLink) || !strings.Contains(errUnknown.Error(), `"nosuchif0"`) {
		t.Errorf("unknown name: %v", errUnknown)
	}
	if !errors.Is(errNoAddr, neigh.ErrNoLink) || !strings.Contains(errNoAddr.Error(), p.BAddr.String()) {
		t.Errorf("foreign address: %v", errNoAddr)
	}
	if !errors.Is(errV6, neigh.ErrNotIPv4) {
		t.Errorf("IPv6 address: %v", errV6)
	}
}

func TestResolvePeer(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	p := netns.NewPair(t)
	peer := showLink(t, p.B, p.BIf)
	exec(t, p.A, "ip", "neigh", "flush", "all")
	exec(t, p.A, "ip", "route", "add", "10.200.0.0/16", "via", p.BAddr.String())
	for _, dst := range []string{p.BAddr.String(), "10.200.1.1"} {
		var hop neigh.Hop
		in(t, p.A, func() (err error) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			hop, err = neigh.Resolve(ctx, netip.MustParseAddr(dst))
			return err
		})
		viaGW := dst != p.BAddr.String()
		if hop.MAC.String() != peer.Address || hop.Link.Name != p.AIf || hop.Src != p.AAddr ||
			hop.Gateway.IsValid() != viaGW || (viaGW && hop.Gateway != p.BAddr) {
			t.Errorf("Resolve(%s) = %+v; want MAC %s via %s src %v (gateway: %v)", dst, hop, peer.Address, p.AIf, p.AAddr, viaGW)
		}
	}
	out, _ := p.A.Exec("ip", "neigh", "show", p.BAddr.String())
	if !strings.Contains(out, peer.Address) {
		t.Errorf("ip neigh after Resolve: %s", out)
	}
}

func TestResolveMulticastAndBroadcast(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	p := netns.NewPair(t)
	exec(t, p.A, "ip", "route", "add", "224.0.0.0/4", "dev", p.AIf)
	bcast := p.AAddr.As4()
	bcast[3] = 255
	for _, tc := range []struct{ dst, mac string }{
		{"239.1.2.3", "01:00:5e:01:02:03"},
		{"224.200.0.251", "01:00:5e:48:00:fb"},
		{netip.AddrFrom4(bcast).String(), "ff:ff:ff:ff:ff:ff"},
	} {
		var hop neigh.Hop
		in(t, p.A, func() (err error) {
			hop, err = neigh.Resolve(context.Background(), netip.MustParseAddr(tc.dst))
			return err
		})
		if hop.MAC.String() != tc.mac || hop.Link.Name != p.AIf || hop.Src != p.AAddr || hop.Gateway.IsValid() {
			t.Errorf("Resolve(%s) = %+v, want MAC %s via %s src %v", tc.dst, hop, tc.mac, p.AIf, p.AAddr)
		}
	}
}

func TestResolveFailures(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	p := netns.NewPair(t)
	missing := p.AAddr.As4()
	missing[3] = 99
	absent := netip.AddrFrom4(missing)
	var errDefault, errShort, errNoRoute, errLocal, errV6 error
	var tookDefault, tookShort time.Duration
	in(t, p.A, func() error {
		start := time.Now()
		_, errDefault = neigh.Resolve(context.Background(), absent) // DefaultTimeout
		tookDefault = time.Since(start)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, errShort = neigh.Resolve(ctx, absent)
		tookShort = time.Since(start)
		_, errNoRoute = neigh.Resolve(ctx, netip.MustParseAddr("192.0.2.1"))
		_, errLocal = neigh.Resolve(ctx, p.AAddr)
		_, errV6 = neigh.Resolve(ctx, netip.MustParseAddr("2001:db8::1"))
		return nil
	})
	if !errors.Is(errDefault, neigh.ErrUnresolved) || !strings.Contains(errDefault.Error(), absent.String()) ||
		tookDefault < neigh.DefaultTimeout || tookDefault > neigh.DefaultTimeout+500*time.Millisecond {
		t.Errorf("Resolve(%v) without deadline: %v after %v; want ErrUnresolved after ~%v", absent, errDefault, tookDefault, neigh.DefaultTimeout)
	}
	if !errors.Is(errShort, neigh.ErrUnresolved) || !errors.Is(errShort, context.DeadlineExceeded) || tookShort > 400*time.Millisecond {
		t.Errorf("Resolve(%v) with 100 ms: %v after %v", absent, errShort, tookShort)
	}
	if !errors.Is(errNoRoute, neigh.ErrNoRoute) {
		t.Errorf("no route: %v", errNoRoute)
	}
	if !errors.Is(errLocal, neigh.ErrNoRoute) {
		t.Errorf("local address: %v", errLocal)
	}
	if !errors.Is(errV6, neigh.ErrNotIPv4) {
		t.Errorf("IPv6: %v", errV6)
	}
	t.Logf("unresolved: %v", errDefault)
}

// TestCache is not parallel: AllocsPerRun counts every goroutine's
// allocations.
func TestCache(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	peer := showLink(t, p.B, p.BIf)
	ctx := context.Background()
	c := &neigh.Cache{}
	short := &neigh.Cache{TTL: 50 * time.Millisecond}
	var first, shortFirst neigh.Hop
	in(t, p.A, func() (err error) {
		if first, err = c.Lookup(ctx, p.BAddr); err != nil {
			return err
		}
		shortFirst, err = short.Lookup(ctx, p.BAddr)
		return err
	})
	if first.MAC.String() != peer.Address || shortFirst.MAC != first.MAC {
		t.Fatalf("Lookup = %+v, %+v; want MAC %s", first, shortFirst, peer.Address)
	}
	const fake = "02:00:00:00:00:99"
	exec(t, p.A, "ip", "neigh", "replace", p.BAddr.String(), "lladdr", fake, "dev", p.AIf, "nud", "permanent")
	time.Sleep(60 * time.Millisecond) // short's entry expires
	var fresh, cached, expired, forgotten neigh.Hop
	in(t, p.A, func() (err error) {
		if fresh, err = neigh.Resolve(ctx, p.BAddr); err != nil {
			return err
		}
		if cached, err = c.Lookup(ctx, p.BAddr); err != nil {
			return err
		}
		if expired, err = short.Lookup(ctx, p.BAddr); err != nil {
			return err
		}
		c.Forget(p.BAddr)
		forgotten, err = c.Lookup(ctx, p.BAddr)
		return err
	})
	for _, tc := range []struct {
		name string
		hop  neigh.Hop
		want string
	}{{"Resolve", fresh, fake}, {"cached", cached, peer.Address}, {"expired", expired, fake}, {"forgotten", forgotten, fake}} {
		if tc.hop.MAC.String() != tc.want {
			t.Errorf("%s: MAC %v, want %s", tc.name, tc.hop.MAC, tc.want)
		}
	}
	// Hits are served from memory, so they work outside the namespace.
	var hop neigh.Hop
	var err error
	allocs := testing.AllocsPerRun(1000, func() { hop, err = c.Lookup(ctx, p.BAddr) })
	if err != nil || hop.MAC.String() != fake || allocs != 0 {
		t.Errorf("cached Lookup: %v, %v, %v allocs per run (want 0)", hop.MAC, err, allocs)
	}
	c.Flush()
	const fake2 = "02:00:00:00:00:98"
	exec(t, p.A, "ip", "neigh", "replace", p.BAddr.String(), "lladdr", fake2, "dev", p.AIf, "nud", "permanent")
	in(t, p.A, func() (err error) {
		hop, err = c.Lookup(ctx, p.BAddr)
		return err
	})
	if hop.MAC.String() != fake2 {
		t.Errorf("after Flush: MAC %v, want %s", hop.MAC, fake2)
	}
}
