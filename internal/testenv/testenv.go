package testenv

import (
	"os"
	"testing"
	"time"
)

// CI reports whether the tests run under CI: CI is set to anything but
// "", "0" or "false".
func CI() bool {
	switch os.Getenv("CI") {
	case "", "0", "false":
		return false
	}
	return true
}

// Skipf skips tb with the message, or fails it under CI.
func Skipf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if CI() {
		tb.Fatalf("CI: must not skip: "+format, args...)
		return
	}
	tb.Skipf(format, args...)
}

// pollEvery is the interval of Await's polls.
const pollEvery = time.Millisecond

// Await polls cond until it holds or timeout passes and reports whether it
// held: the bounded wait for a condition that tests use instead of a sleep.
// Between polls it waits on a ticker.
func Await(timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}

// Until is Await that fails tb, naming what it waited for, when the
// condition does not hold within timeout.
func Until(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Await(timeout, cond) {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
