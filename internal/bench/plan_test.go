package bench

import (
	"fmt"
	"testing"
)

// One ring alone is measured first, whatever the counts asked, and no
// count twice.
func TestRingCounts(t *testing.T) {
	if got := ringCounts(&Config{Rings: []int{4, 16, 4}}); fmt.Sprint(got) != "[1 4 16]" {
		t.Errorf("ring counts %v, want one ring first, no repeats", got)
	}
}
