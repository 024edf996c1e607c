package replica_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// BenchmarkLinesThroughput pushes records as fast as the producer can and
// waits for the mirror, over one line (line A of the two-network topology)
// and over both: records/s through the mirror, NAKs and gaps. The two
// lines' rate over the one line's is the target (≥ 0.8).
//
//	go test -run '^$' -bench LinesThroughput -benchtime 5x -count 3 ./replica
func BenchmarkLinesThroughput(b *testing.B) {
	for _, two := range []bool{false, true} {
		b.Run(map[bool]string{false: "one", true: "two"}[two], func(b *testing.B) { linesThroughput(b, two) })
	}
}

func linesThroughput(b *testing.B, two bool) {
	netns.Require(b)
	p := netns.NewPair(b)
	la, err := p.AddLink()
	if err != nil {
		b.Fatal(err)
	}
	lb, err := p.AddLink()
	if err != nil {
		b.Fatal(err)
	}
	src := newSourceAt(b, p.A, p.AAddr, 1<<21, filepath.Join(shmDir(b), "source"))
	scfg := replica.ServerConfig{Multicast: mcastGroup(), Iface: la.AAddr, Linger: -1}
	mcfg := replica.MirrorConfig{From: fromOldest, AnySource: true, Ring: filepath.Join(shmDir(b), "mirror"), Reconnect: 50 * time.Millisecond}
	if two {
		scfg.MulticastB, scfg.IfaceB, mcfg.IfaceB = groupB, lb.AAddr, lb.BAddr
	}
	src.serve(scfg)
	mr := &mirror{tb: b, path: mcfg.Ring}
	mr.launch(newMirrorOf(b, src, la.BAddr, mcfg), p.B.Go)
	src.push(1000)
	mr.waitFor(1000, 10*time.Second)
	st0 := mr.m.Stats()
	const n = 200_000
	var active time.Duration
	for b.Loop() {
		last := src.w.Next() + n - 1
		start := time.Now()
		src.push(n)
		mr.waitFor(last, time.Minute)
		active += time.Since(start)
	}
	st := mr.m.Stats()
	b.ReportMetric(float64(st.Records-st0.Records)/active.Seconds(), "records/s")
	b.ReportMetric(float64(st.NaksSent-st0.NaksSent), "naks")
	b.ReportMetric(float64(st.Gaps-st0.Gaps), "gaps")
}
