package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// waitSamples is how many push-then-Wait round trips waitAcks times per
// mirror count.
const waitSamples = 2000

// waitAcks times Server.AwaitApplied, the source's replication acknowledgement:
// push one record, then Wait until n of the source's mirrors report it
// applied (published in their rings), one record in flight, for n = 1 and
// n = mirrors. A Wait that does not reach n in 5 s fails the run.
func (r *rig) waitAcks(src *source, mirrors int) ([]report.Latency, error) {
	var out []report.Latency
	for _, n := range []int{1, mirrors} {
		h := hist.New()
		for i := range waitSamples + waitSamples/10 { // the first tenth warms up
			start := time.Now()
			if err := src.push(r); err != nil {
				return nil, err
			}
			seq := src.w.Next() - 1
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			got, err := src.srv.AwaitApplied(ctx, n, seq)
			cancel()
			if err != nil || got < n {
				return nil, fmt.Errorf("bench: Wait for %d mirrors at %d: %d, %v", n, seq, got, err)
			}
			if i >= waitSamples/10 {
				h.Record(time.Since(start))
			}
		}
		out = append(out, report.Latency{Name: fmt.Sprintf("source's Wait for %d of %d mirrors, push to return", n, mirrors), Lat: h.Percentiles()})
	}
	return out, nil
}
