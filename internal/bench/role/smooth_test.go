package role

import (
	"testing"
	"time"
)

// smoothPush pushes every record it was asked for, none before it is
// due, and sleeps between records rather than pushing them in Go
// timer-sized bursts.
func TestSmoothPush(t *testing.T) {
	const rate, count = 50_000, 2_000
	gap := time.Second / rate
	var at []time.Duration
	start := time.Now()
	res, err := smoothPush(rate, time.Minute, count, func() (uint64, error) {
		at = append(at, time.Since(start))
		return uint64(len(at)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pushed != count || res.Last != count || len(at) != count {
		t.Fatalf("pushed %d (last %d, %d calls), want %d", res.Pushed, res.Last, len(at), count)
	}
	for k, d := range at {
		if d < time.Duration(k)*gap {
			t.Fatalf("record %d pushed at %v, before it was due at %v", k, d, time.Duration(k)*gap)
		}
	}
	if res.Wakes == 0 {
		t.Errorf("no sleep between %d records at %d/s", count, rate)
	}
	t.Logf("%d records in %v, %d wakes: %.1f records a wake", count, at[count-1], res.Wakes, float64(count)/float64(res.Wakes))
}
