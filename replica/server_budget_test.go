package replica

import (
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ringfire/ringfire/shm"
)

// A peer's bucket is its address's; an IPv6 peer's, its /64's.
func TestRepairKey(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"10.0.0.1", "10.0.0.1"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"2001:db8:0:7::1", "2001:db8:0:7::"},
		{"2001:db8:0:7:ffff:1:2:3", "2001:db8:0:7::"},
	} {
		if got := repairKey(netip.MustParseAddr(c.a)); got != netip.MustParseAddr(c.b) {
			t.Errorf("repairKey(%s) = %s, want %s", c.a, got, c.b)
		}
	}
}

// A bucket nobody holds is forgotten once full again, and not before (a
// peer reconnecting would get a full one); past repairAddrsMax buckets,
// new addresses share one.
func TestRepairBuckets(t *testing.T) {
	b := &repairBudget{addrRate: 1 << 20, addrBurst: 1 << 16, addrs: map[netip.Addr]*addrBucket{}, sweepAt: 64}
	a, c := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	p := &pacer{b: b}
	p.key, p.addr = b.hold(a)
	p.release()
	if len(b.addrs) != 0 {
		t.Fatalf("a full bucket nobody holds was kept: %d", len(b.addrs))
	}
	p.key, p.addr = b.hold(a)
	if !p.addr.AllowN(time.Now(), 1<<16) {
		t.Fatal("a new bucket is not full")
	}
	p.release()
	if _, ok := b.addrs[a]; !ok {
		t.Fatal("a drained bucket was forgotten: reconnecting would refill it")
	}
	if key, lim := b.hold(a); key != a || lim != p.addr || lim.AllowN(time.Now(), 1<<16) {
		t.Fatal("reconnecting got another bucket, or a full one")
	}
	b.sweep(time.Now().Add(time.Second)) // refilled by then, but held
	if _, ok := b.addrs[a]; !ok {
		t.Fatal("a held bucket was swept")
	}
	b.addrs[a].refs = 0
	b.sweep(time.Now().Add(time.Second))
	if len(b.addrs) != 0 {
		t.Fatalf("a full bucket nobody holds survived the sweep: %d", len(b.addrs))
	}
	for i := range repairAddrsMax {
		b.hold(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}))
	}
	if key, _ := b.hold(c); key != netip.IPv6Unspecified() || len(b.addrs) != repairAddrsMax+1 {
		t.Fatalf("past %d buckets: key %v, %d buckets; want the shared one", repairAddrsMax, key, len(b.addrs))
	}
}

// The configured rates and bursts: 0 the default, negative no limit, a
// burst of 0 one full catch-up, never less than a frame.
func TestBudgetOf(t *testing.T) {
	const def, whole, frame = 100, 1 << 20, 1000
	for _, c := range []struct {
		r, burst  int64
		wantR     rate.Limit
		wantBurst int
	}{
		{0, 0, def, whole},
		{-1, 0, 0, 0},
		{500, 10, 500, frame},
		{500, 5000, 500, 5000},
	} {
		if r, burst := budgetOf(c.r, def, c.burst, whole, frame); r != c.wantR || burst != c.wantBurst {
			t.Errorf("budgetOf(%d, %d) = %v, %d; want %v, %d", c.r, c.burst, r, burst, c.wantR, c.wantBurst)
		}
	}
}

// NewServer refuses a negative burst, naming the field, before it opens
// anything (the ring path does not exist), and sets the budget up from
// the ring's layout: Stats shows it before Serve runs.
func TestNewServerRepairConfig(t *testing.T) {
	for _, c := range []struct {
		cfg   ServerConfig
		field string
	}{
		{ServerConfig{RepairBurst: -1}, "RepairBurst"},
		{ServerConfig{RepairAddrBurst: -2}, "RepairAddrBurst"},
	} {
		c.cfg.Ring = filepath.Join(t.TempDir(), "none")
		_, err := NewServer(c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewServer(%s < 0) = %v, want ErrConfig naming the field", c.field, err)
		}
	}
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 56, Capacity: 1 << 16}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, err := NewServer(ServerConfig{Ring: path, Bind: "127.0.0.1:0", RepairAddrRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := s.Stats().Repair
	whole := catchUpBytes(w.Ring().Layout())
	if st.Rate != DefaultRepairRate || st.Burst != whole || st.AddrRate != 0 {
		t.Errorf("budget %+v, want rate %d, burst %d (one catch-up), no per-address limit", st, DefaultRepairRate, whole)
	}
}
