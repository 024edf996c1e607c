package hist

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// Hist records latencies in nanoseconds, 1 ns to 10 s, 3 significant
// digits.
type Hist struct{ h *hdrhistogram.Histogram }

// New is an empty histogram.
func New() Hist { return Hist{hdrhistogram.New(1, int64(10*time.Second), 3)} }

// Record adds one latency (at least 1 ns).
func (h Hist) Record(d time.Duration) { h.h.RecordValue(max(int64(d), 1)) }

// Percentiles summarizes the histogram in microseconds.
func (h Hist) Percentiles() report.Percentiles {
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
