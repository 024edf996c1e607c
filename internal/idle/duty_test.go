package idle

import (
	"testing"
	"time"
)

// burst drives d as a loop that works for busy, then finds nothing for
// gap (a fruitless round every step), from *now, n times.
func burst(d *Duty, now *time.Time, busy, gap, step time.Duration, n int) {
	for range n {
		for t := time.Duration(0); t < busy; t += step {
			d.Work(*now)
			*now = now.Add(step)
		}
		for t := time.Duration(0); t < gap; t += step {
			d.Rest(*now)
			*now = now.Add(step)
		}
	}
}

// A loop busy for a quarter of every millisecond is hot; one busy for a
// twentieth, or idle for a window, is not.
func TestDuty(t *testing.T) {
	now := time.Unix(0, 0)
	var d Duty
	burst(&d, &now, 250*time.Microsecond, 750*time.Microsecond, 5*time.Microsecond, 10)
	if !d.Hot() {
		t.Fatal("a loop busy 25% of its time is not hot")
	}
	d.Rest(now.Add(DutyWindow + time.Microsecond))
	if d.Hot() {
		t.Fatal("a loop idle for a whole window is still hot")
	}
	now = now.Add(time.Second)
	burst(&d, &now, 50*time.Microsecond, 950*time.Microsecond, 5*time.Microsecond, 10)
	if d.Hot() {
		t.Fatal("a loop busy 5% of its time is hot")
	}
}

// A hot Adaptive loop yields for HotYieldFor after its last work where a
// cold one sleeps after YieldFor: a steady stream in 1-ms bursts, a
// quarter of each spent working, never sleeps between its bursts; a
// light one (a twentieth) sleeps in every gap; once the stream stops, the
// loop sleeps within HotYieldFor.
func TestAdaptiveHot(t *testing.T) {
	for _, tc := range []struct {
		name       string
		busy       time.Duration
		wantSleeps bool
	}{
		{"steady", 250 * time.Microsecond, false},
		{"light", 50 * time.Microsecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			d := NewIdler(Strategy{Mode: Adaptive}, nil)
			d.now = func() time.Time { t.Fatal("IdleAt read the clock"); return now }
			const step = 10 * time.Microsecond
			for i := range 20 {
				for w := time.Duration(0); w < tc.busy; w += step {
					d.Busy(now)
					now = now.Add(step)
				}
				for w := tc.busy; w < time.Millisecond; w += step {
					d.IdleAt(now, time.Nanosecond) // a sleep bounded by 1 ns: no wait
					now = now.Add(step)
				}
				if i == 4 { // the first bursts warm the loop up
					d.st = Stats{}
				}
			}
			st := d.Stats()
			if got := st.Sleeps+st.Spins > 0; got != tc.wantSleeps {
				t.Fatalf("stats %+v: slept between bursts %v, want %v", st, got, tc.wantSleeps)
			}
			if !tc.wantSleeps && st.HotYields == 0 {
				t.Fatalf("stats %+v: no hot yield", st)
			}
			before := st.Sleeps + st.Spins
			for w := time.Duration(0); w < HotYieldFor+DutyWindow; w += step {
				d.IdleAt(now, time.Nanosecond)
				now = now.Add(step)
			}
			if st := d.Stats(); st.Sleeps+st.Spins == before {
				t.Fatalf("stats %+v: still not sleeping %v after the stream stopped", st, HotYieldFor+DutyWindow)
			}
		})
	}
}
