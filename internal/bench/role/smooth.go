package role

import (
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// minSleep is the shortest sleep of smoothPush: a wake-up costs this
// machine kind 19–41 µs of CPU (a thread in nanosleep(2) with a 1 ns
// timer slack: 0.50 cores at 18,768 wakes/s, 0.12 at 4,174), so a
// producer woken for every record of 20 k records/s would take half a
// core from the processes it measures.
const minSleep = 250 * time.Microsecond

// smoothPush pushes rate records/s, each when it is due, for d or until
// count records were pushed: between two it sleeps in nanosleep(2) until
// the next one is due, at least minSleep, on its own thread with the
// timer slack cut to 1 ns. Go's timers (pace.Sleep) would wake it about
// once a millisecond and push rate/1000 records at a time: at 20 k
// records/s a burst of 20 every millisecond, where this pushes one to
// five every 250 µs.
func smoothPush(rate uint64, d time.Duration, count uint64, push func() (uint64, error)) (ProducerResult, error) {
	var res ProducerResult
	if count == 0 {
		count = ^uint64(0)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return res, os.NewSyscallError("prctl PR_SET_TIMERSLACK", err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // the default again
	gap := float64(time.Second) / float64(rate)
	start := time.Now()
	for el := time.Duration(0); res.Pushed < count && (d == 0 || el < d); el = time.Since(start) {
		for due := min(uint64(float64(el)/gap)+1, count); res.Pushed < due; res.Pushed++ {
			last, err := push()
			if err != nil {
				return res, err
			}
			res.Last = last
		}
		next := start.Add(time.Duration(float64(res.Pushed) * gap))
		if wait := time.Until(next); wait > 0 {
			wait = max(wait, minSleep)
			ts := unix.NsecToTimespec(int64(wait))
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
			res.Wakes++
		}
	}
	return res, nil
}
