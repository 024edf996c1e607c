package replica

import (
	"testing"

	"github.com/ringfire/ringfire/replica/wire"
)

// nopSink takes records and holes and keeps nothing.
type nopSink struct{}

func (nopSink) write(uint64, []byte, []byte) error { return nil }
func (nopSink) skip(uint64)                        {}

// BenchmarkSequencerData is the sequencer's hot path: DATA frames of one
// record each, in order, as datagrams bring them. One op is one frame.
//
//	go test -run '^$' -bench SequencerData -benchmem -count 5 ./replica
func BenchmarkSequencerData(b *testing.B) {
	s := newSequencer(sqShape, 1, nopSink{}, &MirrorStats{})
	p := make([]byte, sqPayload)
	b.ReportAllocs()
	for i := range b.N {
		h := wire.Header{Kind: wire.KindData, Count: 1, Len: sqPayload, Seq: uint64(i) + 1}
		if err := s.data(h, p, false); err != nil {
			b.Fatal(err)
		}
	}
}
