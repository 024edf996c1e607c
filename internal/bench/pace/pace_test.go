package pace

import (
	"testing"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// The sweep keeps the last lossless rate, goes on past one loss, stops at
// the second in a row or when a step ends it, and is capped only when the
// last rate of all was lossless.
func TestSweepZeroLoss(t *testing.T) {
	rates := []int{1, 2, 3, 4, 5}
	for _, c := range []struct {
		lossless string // one letter a rate: y lossless, n lost, s ErrSweepDone
		want     report.ZeroLoss
		tried    int
	}{
		{"yyyyy", report.ZeroLoss{Rate: 5, Achieved: 50, Capped: true}, 5},
		{"ynyny", report.ZeroLoss{Rate: 5, Achieved: 50, Capped: true}, 5},
		{"yynny", report.ZeroLoss{Rate: 2, Achieved: 20}, 4},
		{"nnyyy", report.ZeroLoss{}, 2},
		{"yyyns", report.ZeroLoss{Rate: 3, Achieved: 30}, 5},
	} {
		tried := 0
		got, err := ZeroLoss("x", rates, func(rate int) (float64, bool, error) {
			tried++
			switch c.lossless[rate-1] {
			case 's':
				return 0, false, ErrSweepDone
			case 'y':
				return float64(10 * rate), true, nil
			}
			return 1, false, nil
		})
		c.want.Transport = "x"
		if err != nil || got != c.want || tried != c.tried {
			t.Errorf("%s: %+v after %d rates, %v; want %+v after %d", c.lossless, got, tried, err, c.want, c.tried)
		}
	}
}
