package bench

import (
	"testing"
	"time"
)

// BenchmarkStamp is the clock read the bench stamps every record with
// (rig.stamp), which the zero-loss sweep reads once per burst instead.
func BenchmarkStamp(b *testing.B) {
	r := &rig{base: time.Now()}
	var sink uint64
	for b.Loop() {
		sink += r.stamp()
	}
	if sink == 0 {
		b.Fatal("every stamp read zero")
	}
}
