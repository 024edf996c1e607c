package hist

import (
	"testing"
	"time"
)

// Percentiles are in microseconds, ordered, and count every sample; an
// empty histogram summarizes as zero, and a zero latency counts as 1 ns.
func TestPercentiles(t *testing.T) {
	if got := New().Percentiles(); got.Samples != 0 || got.P50 != 0 {
		t.Fatalf("empty: %+v", got)
	}
	h := New()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	h.Record(0)
	p := h.Percentiles()
	if p.Samples != 1001 || p.Min != 0.001 {
		t.Fatalf("samples %d, min %v µs; want 1001 and 0.001", p.Samples, p.Min)
	}
	if p.P50 < 495 || p.P50 > 505 || p.P99 < 985 || p.P99 > 995 || p.Max < 999 || p.Max > 1001 {
		t.Errorf("p50 %v, p99 %v, max %v µs; want about 500, 990, 1000", p.P50, p.P99, p.Max)
	}
	if !(p.Min <= p.P50 && p.P50 <= p.P75 && p.P75 <= p.P90 && p.P90 <= p.P99 && p.P99 <= p.P999 && p.P999 <= p.P9999 && p.P9999 <= p.Max) {
		t.Errorf("percentiles out of order: %+v", p)
	}
}
