package report

import (
	"testing"
	"time"
)

// Hiccups count each sleep and the ones that ended over 1 ms and over
// 5 ms late, keep the longest, and show a dash when no sleep was timed.
func TestHiccups(t *testing.T) {
	var h Hiccups
	if got := h.cell(); got != dash {
		t.Fatalf("no sleep: cell %q, want %q", got, dash)
	}
	for _, over := range []time.Duration{3 * time.Microsecond, 2 * time.Millisecond, 7 * time.Millisecond, 40 * time.Microsecond} {
		h.Add(over)
	}
	want := Hiccups{Sleeps: 4, Max: Duration(7 * time.Millisecond), Over1ms: 2, Over5ms: 1}
	if h != want {
		t.Fatalf("hiccups %+v, want %+v", h, want)
	}
	if got := h.cell(); got != "7000" {
		t.Fatalf("cell %q, want 7000", got)
	}
}
