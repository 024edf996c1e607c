package replica

import (
	"time"
)

const (
	// seqSampleEvery is how often the source samples its ring's write_seq
	// to date records (the resolution of MirrorInfo.Lag).
	seqSampleEvery = 10 * time.Millisecond
	// seqSamples is how many samples are kept: at least 80 s of history
	// under constant load (a sample is taken only when write_seq moved).
	seqSamples = 8192
)

// seqIdleEvery is how often the source looks while write_seq stands still
// (the sender wakes it as soon as write_seq moves again). A variable only
// so that a test can make it longer than the test.
var seqIdleEvery = time.Second

// seqSample says that write_seq was first seen at seq at time at.
type seqSample struct {
	seq uint64
	at  int64 // unix nanoseconds
}

// seqIndex is a bounded history of the ring's write_seq: increasing
// sequences with the time each was first seen.
type seqIndex struct {
	s     [seqSamples]seqSample
	head  int // index of the oldest sample
	n     int
	last  uint64
	lastT int64
}

// add records write_seq w seen at now (nothing if it did not move).
func (x *seqIndex) add(w uint64, now time.Time) {
	if x.n > 0 && w <= x.last {
		return
	}
	x.last, x.lastT = w, now.UnixNano()
	i := (x.head + x.n) % seqSamples
	if x.n == seqSamples {
		x.head = (x.head + 1) % seqSamples
	} else {
		x.n++
	}
	x.s[i] = seqSample{seq: w, at: x.lastT}
}

// age is how long ago the source first saw a write_seq beyond applied:
// the age of the oldest record after applied, to a sample's resolution.
// When that record is older than the history, it is the age of the oldest
// sample (a lower bound). Nothing beyond applied seen yet: 0.
func (x *seqIndex) age(applied uint64, now time.Time) time.Duration {
	if x.n == 0 || x.last <= applied {
		return 0
	}
	// The first sample with seq > applied (samples increase).
	lo, hi := 0, x.n-1
	for lo < hi {
		mid := (lo + hi) / 2
		if x.s[(x.head+mid)%seqSamples].seq > applied {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(time.Duration(now.UnixNano()-x.s[(x.head+lo)%seqSamples].at), 0)
}
