package replica_test

// The repair budget against the attack that showed it was missing: peers
// that connect, say HELLO from newest, NAK 65,535 records and hang up,
// over and over, from two addresses, while a live mirror takes the stream
// through a router whose link to the mirrors is shaped to 1 Gbit/s.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"golang.org/x/sys/unix"
)

// routedLAN is a source behind a router: source ns -- router ns -- a
// bridged LAN of hosts. The router's egress toward the LAN is shaped
// (tbf), as a source's uplink would be: shaping the source's own veth
// would hide a flood, TCP Small Queues keeping that queue short.
type routedLAN struct {
	src     *netns.NS
	srcAddr netip.Addr
	router  *netns.NS
	lan     *netns.LAN
}

// newRoutedLAN builds the network with n LAN hosts and shapes the router's
// LAN side with tbf (rate 1gbit, latency 20ms).
func newRoutedLAN(t *testing.T, n int) *routedLAN {
	t.Helper()
	netns.Require(t)
	if _, err := exec.LookPath("tc"); err != nil {
		testenv.Skipf(t, "skipping: tc is missing (iproute2): %v", err)
	}
	p := netns.NewPair(t) // A: the source, B: the router
	lan := netns.NewLAN(t, n)
	r := &routedLAN{src: p.A, srcAddr: p.AAddr, router: p.B, lan: lan}
	gw := lan.Addrs[0].As4()
	gw[3] = 254
	gwAddr := netip.AddrFrom4(gw)
	lanNet := netip.PrefixFrom(lan.Addrs[0], 24).Masked()
	srcNet := netip.PrefixFrom(p.AAddr, 24).Masked()
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	run("ip", "link", "add", "vtr", "netns", p.B.Name, "mtu", "1500", "type", "veth", "peer", "name", "vtb", "netns", lan.Bridge.Name, "mtu", "1500")
	run("ip", "-n", lan.Bridge.Name, "link", "set", "vtb", "master", "br0")
	run("ip", "-n", lan.Bridge.Name, "link", "set", "vtb", "up")
	run("ip", "-n", p.B.Name, "addr", "add", gwAddr.String()+"/24", "dev", "vtr")
	run("ip", "-n", p.B.Name, "link", "set", "vtr", "up")
	run("ip", "netns", "exec", p.B.Name, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	run("ip", "-n", p.A.Name, "route", "add", lanNet.String(), "via", p.BAddr.String())
	for _, h := range lan.Hosts {
		run("ip", "-n", h.Name, "route", "add", srcNet.String(), "via", gwAddr.String())
	}
	if _, err := p.B.Exec("tc", "qdisc", "add", "dev", "vtr", "root", "tbf", "rate", "1gbit", "burst", "128kb", "latency", "20ms"); err != nil {
		testenv.Skipf(t, "skipping: no tbf qdisc: %v", err)
	}
	r.reachable(t)
	return r
}

// reachable waits until every LAN host reaches the source over the router.
func (r *routedLAN) reachable(t *testing.T) {
	t.Helper()
	var ln net.Listener
	if err := r.src.Do(func() (err error) { ln, err = net.Listen("tcp", netip.AddrPortFrom(r.srcAddr, 0).String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for i, h := range r.lan.Hosts {
		testenv.Until(t, 10*time.Second, fmt.Sprintf("host %d reaching the source through the router", i), func() bool {
			return h.Do(func() error {
				c, err := net.DialTimeout("tcp", ln.Addr().String(), 200*time.Millisecond)
				if err == nil {
					c.Close()
				}
				return err
			}) == nil
		})
	}
}

// shaped returns what the router's tbf sent toward the LAN and dropped
// (its queue full: a packet would have waited past the 20 ms it holds).
func (r *routedLAN) shaped(t *testing.T) (bytes, dropped uint64) {
	t.Helper()
	out, err := r.router.Exec("tc", "-s", "qdisc", "show", "dev", "vtr")
	if err != nil {
		t.Fatal(err)
	}
	m := tbfSent.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no counters in tc's output: %s", out)
	}
	bytes, _ = strconv.ParseUint(m[1], 10, 64)
	dropped, _ = strconv.ParseUint(m[2], 10, 64)
	return bytes, dropped
}

var tbfSent = regexp.MustCompile(`Sent (\d+) bytes \d+ pkt \(dropped (\d+)`)

// lagMeter measures, as a mirror publishes, how long ago the oldest record
// of each batch was pushed (MirrorConfig.Published, on the mirror's run
// loop).
type lagMeter struct {
	stamps [1 << 16]atomic.Int64 // push time (unix ns) by sequence, mod 2^16
	on     atomic.Bool
	prev   uint64 // the run loop's: the last sequence published
	worst  atomic.Int64
	over   atomic.Uint64 // batches whose oldest record waited 20 ms or more
	n      atomic.Uint64
}

func (l *lagMeter) stamp(seq uint64) {
	l.stamps[seq%uint64(len(l.stamps))].Store(time.Now().UnixNano())
}

func (l *lagMeter) published(seq uint64) {
	if l.prev != 0 && seq > l.prev && l.on.Load() {
		d := time.Now().UnixNano() - l.stamps[(l.prev+1)%uint64(len(l.stamps))].Load()
		l.n.Add(1)
		if d >= int64(20*time.Millisecond) {
			l.over.Add(1)
		}
		if d > l.worst.Load() {
			l.worst.Store(d) // only the run loop stores it
		}
	}
	l.prev = max(l.prev, seq)
}

// A live mirror keeps its lag under 20 ms with no gap while peers at two
// addresses (three loops each: one hangs up at once, two read the answer
// first, so that it crosses the uplink) connect, NAK 65,535 records and
// hang up for 3 s, through a router shaping the source's uplink to
// 1 Gbit/s with 20 ms of buffer; the repair the source sends stays within
// its budget (the defaults: 24 MiB/s in all, 6 MiB/s per address, each
// bucket one full catch-up of the ring).
//
// The uplink's part of the lag is asserted exactly: its tbf, which drops
// what would wait past its 20 ms, drops nothing. The mirror's measured lag
// also holds the CPU: the source, the mirror and the attackers share this
// machine's 2 CPUs (and a test machine's other tests), so one batch in
// twenty may lag 20 ms waiting for one (the worst is logged); a full
// uplink queue would hold back nearly every batch. The attackers take only what CPU the others
// leave (nice 19), as another host's would; they share this process, and
// GOMAXPROCS is roundTripProcs so that their goroutines do not hold the Ps
// the sender's and the mirror's locked threads need (as in
// BenchmarkRoundTrip).
func TestRepairBudgetAgainstNakLoops(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(roundTripProcs))
	r := newRoutedLAN(t, 3) // host 0: the live mirror; 1 and 2: attackers
	const capacity = 16384  // 56-byte records: a full catch-up is 0.9 MB
	src := newSource(t, r.src, r.srcAddr, capacity)
	meter := new(lagMeter)
	push := src.publish
	src.publish = func(seq uint64) error { meter.stamp(seq); return push(seq) }
	began := time.Now()
	srv := src.serve(replica.ServerConfig{UDPPort: 7403})
	mr := startMirror(t, r.lan.Hosts[0], r.lan.Addrs[0], src, replica.MirrorConfig{Unicast: true, Published: meter.published}, nil)

	// The producer: 50 records a millisecond, 50,000 a second.
	stop := make(chan struct{})
	var produced sync.WaitGroup
	var pushErr error
	produced.Go(func() {
		tick := time.NewTicker(time.Millisecond) // the producer's pace: 50 records a millisecond
		defer tick.Stop()
		for {
			for range 50 {
				if pushErr = src.publish(src.w.Next()); pushErr != nil {
					return
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	waitDatagrams(t, mr)
	meter.on.Store(true)
	sent0, dropped0 := r.shaped(t)

	var loops, attackBytes, failed atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	var done []<-chan struct{}
	for _, h := range r.lan.Hosts[1:] {
		for i := range 3 {
			drain := i > 0
			done = append(done, h.Go(func() {
				// The attacker is another host's: on this one it takes
				// only the CPU the source and the mirror leave (its
				// thread ends with the loop).
				unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
				for time.Now().Before(deadline) {
					n, err := nakLoop(srv.Addr().String(), drain)
					loops.Add(1)
					attackBytes.Add(int64(n))
					if err != nil {
						failed.Add(1)
					}
				}
			}))
		}
	}
	for _, d := range done {
		<-d
	}
	meter.on.Store(false)
	sent1, dropped1 := r.shaped(t)
	close(stop)
	produced.Wait()
	if pushErr != nil {
		t.Fatal(pushErr)
	}
	st := mr.waitFor(src.w.Next()-1, 10*time.Second)
	sst := srv.Stats()
	elapsed := time.Since(began)

	rep := sst.Repair
	// The buckets started full at most when Serve began; a reservation
	// may run 100 ms ahead of its tokens; three addresses drew repair.
	secs := (elapsed + 100*time.Millisecond).Seconds()
	budget := min(float64(rep.Burst)+rep.Rate*secs, 3*(float64(rep.AddrBurst)+rep.AddrRate*secs))
	retrans := float64(sst.Retransmitted * recordSize)
	t.Logf("attack: %d loops (%d failed), %d bytes sent; source: %d NAKs answered, %d records retransmitted (%.1f MB), repair %d bytes in %v (budget %.1f MB), factor %.0f",
		loops.Load(), failed.Load(), attackBytes.Load(), sst.NaksAnswered, sst.Retransmitted, retrans/1e6, rep.Bytes, elapsed.Round(time.Millisecond), budget/1e6, float64(rep.Bytes)/float64(attackBytes.Load()))
	t.Logf("repair %+v", rep)
	t.Logf("uplink (tbf 1gbit): %.1f MB sent during the attack, %d packets dropped", float64(sent1-sent0)/1e6, dropped1-dropped0)
	t.Logf("live mirror: worst lag %v over %d batches, %d of them 20 ms or more; gaps %d, NAKs %d",
		time.Duration(meter.worst.Load()), meter.n.Load(), meter.over.Load(), st.Gaps, st.NaksSent)

	if loops.Load()-failed.Load() < 10 {
		t.Fatalf("the attack did not run: %d loops, %d failed", loops.Load(), failed.Load())
	}
	if rep.Burst == 0 || rep.AddrBurst == 0 || rep.Rate != replica.DefaultRepairRate || rep.AddrRate != replica.DefaultRepairAddrRate {
		t.Errorf("budget in force %+v, want the defaults with bursts of one catch-up", rep)
	}
	if retrans > budget || float64(rep.Bytes) > budget {
		t.Errorf("repair sent %.1f MB (%d bytes counted), past the budget of %.1f MB", retrans/1e6, rep.Bytes, budget/1e6)
	}
	if rep.NaksDeferred+rep.NaksRefused == 0 {
		t.Errorf("the budget never held a NAK answer back: %+v", rep)
	}
	if st.Gaps != 0 {
		t.Errorf("the live mirror lost %d records to gaps", st.Gaps)
	}
	if d := dropped1 - dropped0; d != 0 {
		t.Errorf("the uplink dropped %d packets: its queue reached 20 ms", d)
	}
	if n, over := meter.n.Load(), meter.over.Load(); n == 0 || over*20 > n {
		t.Errorf("%d of %d batches lagged 20 ms or more (the worst %v), want under one in twenty", over, n, time.Duration(meter.worst.Load()))
	}
}
