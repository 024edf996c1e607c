package deployed

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// The open loop's sweep goes on past one rate that collapsed (p99 over
// 1 s, a record lapped or lost) and stops at the second in a row, or at
// a step's error with the steps taken before it.
func TestSweepOpen(t *testing.T) {
	ok := report.OpenStep{Lat: report.Percentiles{P99: 900}}
	slow, lapped, lost := ok, ok, ok
	slow.Lat.P99, lapped.Lapped, lost.Lost = 1_000_001, 1, 1
	for _, c := range []struct {
		name  string
		steps []report.OpenStep
		taken int
	}{
		{"every rate kept", []report.OpenStep{ok, ok, ok, ok}, 4},
		{"one collapse, then kept", []report.OpenStep{ok, slow, ok, lapped, ok}, 5},
		{"p99 over 1 s twice", []report.OpenStep{ok, slow, slow, ok}, 3},
		{"lapped, then lost", []report.OpenStep{lapped, lost, ok}, 2},
		{"p99 of 1 s exactly is no collapse", []report.OpenStep{{Lat: report.Percentiles{P99: 1e6}}, slow, ok}, 3},
	} {
		rates := make([]int, len(c.steps))
		for i := range rates {
			rates[i] = (i + 1) * 1000
		}
		var asked []int
		got, err := sweepOpen(rates, func(rate int) (report.OpenStep, error) {
			asked = append(asked, rate)
			s := c.steps[rate/1000-1]
			s.Rate = rate
			return s, nil
		})
		if err != nil || len(got) != c.taken || fmt.Sprint(asked) != fmt.Sprint(rates[:c.taken]) {
			t.Errorf("%s: %d steps (rates %v, %v), want %d", c.name, len(got), asked, err, c.taken)
		}
	}
	boom := errors.New("reader gone")
	got, err := sweepOpen([]int{1, 2, 3}, func(rate int) (report.OpenStep, error) {
		if rate == 2 {
			return report.OpenStep{}, boom
		}
		return ok, nil
	})
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Errorf("a step's error: %d steps, %v; want 1 and the error", len(got), err)
	}
}
