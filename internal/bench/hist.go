package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// hist records latencies in nanoseconds, 1 ns to 10 s, 3 significant
// digits.
type hist struct{ h *hdrhistogram.Histogram }

func newHist() hist { return hist{hdrhistogram.New(1, int64(10*time.Second), 3)} }

func (h hist) record(d time.Duration) { h.h.RecordValue(max(int64(d), 1)) }

// percentiles summarizes the histogram in microseconds.
func (h hist) percentiles() report.Percentiles {
	us := func(v int64) float64 { return float64(v) / 1e3 }
	q := func(p float64) float64 { return us(h.h.ValueAtQuantile(p)) }
	if h.h.TotalCount() == 0 {
		return report.Percentiles{}
	}
	return report.Percentiles{
		Samples: h.h.TotalCount(), Avg: h.h.Mean() / 1e3, Min: us(h.h.Min()),
		P50: q(50), P75: q(75), P90: q(90), P99: q(99), P999: q(99.9), P9999: q(99.99),
		Max: us(h.h.Max()),
	}
}
