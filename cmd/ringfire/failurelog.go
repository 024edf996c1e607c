package main

import "time"

// failureLog rate-limits the log lines of a failure that repeats (a
// mirror retrying a source it cannot reach): the first failure is logged
// at once, then at most one line per interval, carrying the count of
// failures since the previous line. A success starts over. It is not safe
// for concurrent use.
type failureLog struct {
	every  time.Duration
	now    func() time.Time
	last   time.Time // when the last line was due
	since  int       // failures since that line, not yet logged
	logged bool      // a line was logged since the last success
}

func newFailureLog(every time.Duration, now func() time.Time) *failureLog {
	return &failureLog{every: every, now: now}
}

// fail records one failure. When a line is due it returns true with the
// number of failures the line covers (this one included).
func (f *failureLog) fail() (int, bool) {
	f.since++
	now := f.now()
	if f.logged && now.Sub(f.last) < f.every {
		return 0, false
	}
	n := f.since
	f.last, f.since, f.logged = now, 0, true
	return n, true
}

// succeed ends a run of failures: the next one is logged at once.
func (f *failureLog) succeed() { f.since, f.logged = 0, false }
