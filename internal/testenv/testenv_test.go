package testenv

import (
	"testing"
	"time"
)

func TestCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := CI(); got != want {
			t.Errorf("CI=%q: CI() = %v, want %v", v, got, want)
		}
	}
}

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, format
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, format
}

func TestSkipf(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	Skipf(r, "no %s", "ethtool")
	if !r.skipped || r.failed {
		t.Errorf("outside CI: skipped %v failed %v, want a skip", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	Skipf(r, "no %s", "ethtool")
	if r.skipped || !r.failed || r.msg != "CI: must not skip: no %s" {
		t.Errorf("under CI: skipped %v failed %v (%q), want a failure", r.skipped, r.failed, r.msg)
	}
}

func TestAwait(t *testing.T) {
	n := 0
	if !Await(5*time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("Await returned before the condition held (%d polls)", n)
	}
	start := time.Now()
	if Await(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Await of a condition that never holds reported true")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatalf("Await gave up after %v, before its timeout", time.Since(start))
	}
}
