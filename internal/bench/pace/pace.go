package pace

import (
	"errors"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
)

// DrainWait bounds how long a stress run waits for the last echoes.
const DrainWait = 2 * time.Second

// ErrSweepDone is what a sweep's step returns to end it without a result
// for its rate.
var ErrSweepDone = errors.New("pace: sweep done")

// ZeroLoss tries each rate of rates in turn with step, which reports
// the rate achieved and whether every record arrived without repair, up
// to the second rate in a row that loses (or a step's ErrSweepDone): the
// last lossless rate, Capped when it was the last of rates.
func ZeroLoss(tr string, rates []int, step func(rate int) (achieved float64, lossless bool, err error)) (report.ZeroLoss, error) {
	best := report.ZeroLoss{Transport: tr}
	failed := 0
	for i, rate := range rates {
		achieved, ok, err := step(rate)
		if errors.Is(err, ErrSweepDone) {
			break
		}
		if err != nil {
			return best, err
		}
		if ok {
			best.Rate, best.Achieved, best.Capped, failed = rate, achieved, i == len(rates)-1, 0
		} else if failed++; failed == 2 {
			break
		}
	}
	return best, nil
}

// Push calls push for records 0, 1, ... at rate records per second for d,
// without waiting for anything, and between between the bursts: the
// records pushed.
func Push(d time.Duration, rate int, push func(k int) error, between func()) (int, error) {
	start := time.Now()
	pushed := 0
	for el := time.Duration(0); el < d; el = time.Since(start) {
		for due := int(el.Seconds() * float64(rate)); pushed < due; pushed++ {
			if err := push(pushed); err != nil {
				return pushed, err
			}
		}
		between()
	}
	return pushed, nil
}

// Sleep is Push's between for pushers alone on their thread: Go
// sleeps about 1 ms, so the records go in bursts of rate/1000.
func Sleep() { time.Sleep(100 * time.Microsecond) }

// Until polls cond every millisecond until it holds or d passes.
func Until(d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("pace: timed out waiting for " + what)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
