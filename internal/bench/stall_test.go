package bench

import (
	"testing"
	"time"
)

// A stall measurement reads the clock for the time asked, and its counts
// nest: every gap over 5 ms is also over 1 ms, and over 20 µs.
func TestMeasureStall(t *testing.T) {
	st := measureStall(20 * time.Millisecond)
	if st.Readings == 0 || time.Duration(st.For) != 20*time.Millisecond || st.Over5ms > st.Over1ms || st.Over1ms > st.Over20us {
		t.Fatalf("stall %+v", st)
	}
}
