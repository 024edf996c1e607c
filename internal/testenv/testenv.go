// Package testenv decides what a test does when this machine lacks
// something it needs (root, a command, a kernel feature): on a developer's
// machine it skips with the reason; under CI (the CI environment variable
// set, as CI=true) it fails, because CI runs on the machine the product
// targets, where every test can run and a skip would count as a pass. The
// same rule as cilium/ebpf's test helpers.
package testenv

import (
	"os"
	"testing"
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
