package replica_test

// Replication benchmarks, run across two network namespaces joined by a
// veth pair (the rig is in benchrig_test.go; results and how to read them
// are in docs/replication-bench.md). They need root; they report, and never
// assert on, times.
//
//	go test -run '^$' -bench . -benchtime 3s ./replica

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// BenchmarkRoundTrip is a closed-loop ping-pong of one 64-byte record (benchRecordSize): the
// pinger pushes a record stamped with the time into ring A (ns A), served
// to mirror A' (ns B); an echo goroutine reads A' and pushes the record
// into ring B (ns B), served back to mirror B' (ns A), which the pinger
// busy-polls. One op is one round trip: two replication hops, one echo.
// Servers run with Linger 0 (no pacing).
//
// The four endpoints (two sources, two mirrors), the echo and the pinger
// share one Go process. By default the benchmark runs it with GOMAXPROCS
// roundTripProcs, two per endpoint as if each were its own process on this
// 2-CPU machine: with only the machine's 2, the busy-polling pinger and
// the goroutines sleeping on ring futexes (senders, TCP sessions, the echo)
// hold both Ps, so network wake-ups wait for a timer or for sysmon — the
// -gomaxprocs variants keep GOMAXPROCS as given (the -N suffix of the
// benchmark name) to show that. The -spin
// variants busy-poll in every server and mirror (ServerConfig.Spin,
// MirrorConfig.Spin).
func BenchmarkRoundTrip(b *testing.B) {
	variants := []struct {
		suffix string
		spin   bool
		procs  int // 0: GOMAXPROCS as given
	}{{"", false, roundTripProcs}, {"-spin", true, roundTripProcs}, {"-gomaxprocs", false, 0}}
	for _, v := range variants {
		for _, mode := range allModes {
			b.Run(mode+v.suffix, func(b *testing.B) {
				if v.procs > 0 {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(v.procs))
				}
				benchRoundTrip(b, mode, v.spin)
			})
		}
	}
}

// roundTripProcs is GOMAXPROCS during BenchmarkRoundTrip: four endpoints,
// two Ps each.
const roundTripProcs = 8

func benchRoundTrip(b *testing.B, mode string, spin bool) {
	pp := newPingPong(b, mode, spin)
	pp.warmUp(300 * time.Millisecond)
	h := hdrhistogram.New(1, int64(30*time.Second), 3)
	var worst time.Duration
	for b.Loop() {
		rtt := pp.ping()
		if err := h.RecordValue(int64(rtt)); err != nil {
			b.Fatalf("round trip %v: %v", rtt, err)
		}
		worst = max(worst, rtt)
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	b.ReportMetric(us(h.ValueAtQuantile(50)), "p50-µs")
	b.ReportMetric(us(h.ValueAtQuantile(99)), "p99-µs")
	b.ReportMetric(us(h.ValueAtQuantile(99.9)), "p99.9-µs")
	b.ReportMetric(us(int64(worst)), "max-µs")
}

// zeroLossRecords is how many records one op of BenchmarkZeroLossRate/max
// pushes: less than the source ring's 1<<21 slots, so that the source never
// laps the mirror within an op (the mirror catches up between ops).
const zeroLossRecords = 2_000_000

// pacedRates are the offered loads of the paced sweep, records/s; one op
// pushes pacedWindow's worth of records.
var pacedRates = []int{400_000, 800_000, 1_200_000, 1_600_000, 2_400_000, 3_200_000, 4_800_000}

const pacedWindow = 250 * time.Millisecond

// BenchmarkZeroLossRate measures how fast one mirror (ns B) copies a ring
// (ns A, 1<<21 slots) whole. max: one op pushes 2,000,000 records as fast
// as the producer can and ends when the mirror has written the last one;
// records/s is records over the time from the first push to then. paced-N:
// the same, open loop, at N records/s offered. Each reports the mirror's
// gaps (records lost for good: must be 0), the share of records delivered
// and the share that needed a NAK and a TCP retransmission. The parent
// prints the highest paced rate with 0 gaps and 100% delivered.
//
// Like BenchmarkRoundTrip, it runs with GOMAXPROCS roundTripProcs: the
// producer, the source and the mirror share one Go process here, and with
// the machine's 2 Ps the producer's loop and the sender hold both, so a
// mirror parked in Go's poller is readied late (sysmon polls every 10 ms)
// and its socket overflows. max-gomaxprocs keeps GOMAXPROCS as given to
// show that; max-spin busy-polls in the sender and the mirror.
func BenchmarkZeroLossRate(b *testing.B) {
	given := runtime.GOMAXPROCS(0)
	for _, mode := range allModes {
		b.Run(mode, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(roundTripProcs))
			b.Run("max", func(b *testing.B) { benchZeroLoss(b, mode, 0, false) })
			b.Run("max-spin", func(b *testing.B) { benchZeroLoss(b, mode, 0, true) })
			b.Run("max-gomaxprocs", func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(given))
				benchZeroLoss(b, mode, 0, false)
			})
			best, clean := 0, 0
			for _, rate := range pacedRates {
				b.Run(fmt.Sprintf("paced-%dk", rate/1000), func(b *testing.B) {
					r := benchZeroLoss(b, mode, rate, false)
					if r.gaps == 0 && r.delivered == r.pushed {
						best = max(best, rate)
						if r.retransmitted == 0 {
							clean = max(clean, rate)
						}
					}
				})
			}
			// Printed, not logged: a parent benchmark's log only shows with -v.
			fmt.Printf("ZeroLossRate/%s: highest paced rate with 0 gaps and 100%% delivered: %d records/s (with no NAK repair either: %d)\n", mode, best, clean)
		})
	}
}

type zeroLossResult struct {
	pushed, delivered, gaps, retransmitted uint64
}

func benchZeroLoss(b *testing.B, mode string, rate int, spin bool) zeroLossResult {
	netns.Require(b)
	p := netns.NewPair(b)
	dir := shmDir(b)
	src := newBenchSource(b, p.A, p.AAddr, 1<<21, filepath.Join(dir, "source"))
	scfg, mcfg := benchConfigs(mode, 0)
	scfg.Linger = -1 // adaptive, as `ringfire serve` does by default
	scfg.Spin, mcfg.Spin = spin, spin
	var probe transportProbe
	probe.wrap(&scfg, &mcfg)
	src.serve(scfg)
	mr := startBenchMirror(b, p.B, p.BAddr, src, dir, "mirror", mcfg)
	ring, err := shm.Open(mr.path, shm.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ring.Close() })

	// Warm up until the datagram path is live (punch, end of catch-up).
	src.pushRate(20_000, 200_000)
	waitMirrored(b, ring, mr, src, src.w.Next()-1)
	st0 := mr.freshStats(src.w.Next())

	n := zeroLossRecords
	if rate > 0 {
		n = int(float64(rate) * pacedWindow.Seconds())
	}
	var active time.Duration
	var pushed uint64
	maxBurst := 0
	for b.Loop() {
		last := src.w.Next() + uint64(n) - 1
		start := time.Now()
		if rate == 0 {
			src.push(n)
		} else {
			maxBurst = max(maxBurst, src.pushRate(n, float64(rate)))
		}
		waitMirrored(b, ring, mr, src, last)
		active += time.Since(start)
		pushed += uint64(n)
	}
	st := mr.freshStats(src.w.Next())
	r := zeroLossResult{pushed: pushed, delivered: st.Records - st0.Records, gaps: st.Gaps - st0.Gaps,
		retransmitted: st.Retransmitted - st0.Retransmitted}
	b.ReportMetric(float64(pushed)/active.Seconds(), "records/s")
	// Datagrams the mirror received (data and heartbeats), per second: the
	// figure to compare with the raw datagram blasters of package xdp.
	b.ReportMetric(float64(st.Datagrams-st0.Datagrams)/active.Seconds(), "datagrams/s")
	b.ReportMetric(float64(r.gaps), "gaps")
	b.ReportMetric(100*float64(r.delivered)/float64(pushed), "delivered-%")
	b.ReportMetric(100*float64(r.retransmitted)/float64(pushed), "retransmitted-%")
	b.ReportMetric(float64(st.NaksSent-st0.NaksSent), "naks")
	if rate > 0 {
		b.ReportMetric(float64(maxBurst), "max-burst")
	}
	probe.log(b)
	if r.gaps > 0 || r.delivered != pushed {
		b.Logf("%s at %d records/s: %d gaps, %d of %d delivered; mirror %+v", mode, rate, r.gaps, r.delivered, pushed, st)
	}
	return r
}

// waitMirrored waits until the mirror ring's write_seq reaches last.
func waitMirrored(b *testing.B, ring *shm.Ring, mr *mirror, src *source, last uint64) {
	deadline := time.Now().Add(2 * time.Minute)
	for ring.WriteSeq() < last {
		if ring.Replaced() {
			b.Fatalf("the mirror replaced its ring (stats %+v)", mr.m.Stats())
		}
		if time.Now().After(deadline) {
			b.Fatalf("mirror at %d waiting for %d\nmirror %+v\nsource %+v", ring.WriteSeq(), last, mr.m.Stats(), src.srv.Stats())
		}
		mr.alive()
		time.Sleep(50 * time.Microsecond)
	}
}

// fanout is how many unicast mirrors BenchmarkFanout sends to.
const fanout = 16

// BenchmarkFanout is the cost of sending one full datagram (1472 bytes) to
// 16 unicast mirrors, as the source's datagram sender does: sendmmsg-16
// is one replica.UDP.SendBatch of 16 messages sharing one buffer, sendto-16
// is 16 net.UDPConn.WriteToUDPAddrPort calls. The mirrors are 16 UDP sockets
// in ns B that nobody reads: once their buffers are full the kernel drops
// what comes, identically for both variants. On a veth the receive path
// (up to that drop) runs in the sender's system call, so it is included.
// ns/mirror/frame is the time of one op over 16.
func BenchmarkFanout(b *testing.B) {
	netns.Require(b)
	p := netns.NewPair(b)
	var dests []netip.AddrPort
	for range fanout {
		dests = append(dests, listenUDP(b, p.B, p.BAddr).LocalAddr().(*net.UDPAddr).AddrPort())
	}
	frame := make([]byte, replica.DefaultMTU)
	for i := range frame {
		frame[i] = byte(i)
	}
	perMirror := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fanout), "ns/mirror/frame")
	}

	b.Run(fmt.Sprintf("sendmmsg-%d", fanout), func(b *testing.B) {
		u := newUDPIn(b, p.A, replica.UDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 0), Iface: p.AAddr})
		defer u.Close()
		msgs := make([]replica.Message, fanout)
		for i := range msgs {
			msgs[i] = replica.Message{Buf: frame, Addr: dests[i]}
		}
		for b.Loop() {
			if n, err := u.SendBatch(msgs); n != fanout || err != nil {
				b.Fatalf("SendBatch: %d of %d sent: %v", n, fanout, err)
			}
		}
		perMirror(b)
	})

	b.Run(fmt.Sprintf("sendto-%d", fanout), func(b *testing.B) {
		c := listenUDP(b, p.A, p.AAddr)
		for b.Loop() {
			for _, d := range dests {
				if _, err := c.WriteToUDPAddrPort(frame, d); err != nil {
					b.Fatalf("WriteToUDPAddrPort %v: %v", d, err)
				}
			}
		}
		perMirror(b)
	})
}
