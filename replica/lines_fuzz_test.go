package replica

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// FuzzLineRecv feeds arbitrary datagrams to a mirror's two lines: nothing
// panics, every datagram is counted on its line once, and no frame counts
// both first and late on one line more often than DATA came.
//
//	go test -run '^$' -fuzz FuzzLineRecv -fuzztime 30s ./replica
func FuzzLineRecv(f *testing.F) {
	var d [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindData, Count: 1, Seq: 5}.Put(d[:])
	f.Add(append([]byte{0, wire.HeaderSize}, d[:]...))
	f.Add(append(append([]byte{0, wire.HeaderSize}, d[:]...), append([]byte{1, wire.HeaderSize}, d[:]...)...))
	f.Add([]byte{1, 3, 0xff, 0xff, 0xff, 2, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := &fakeLine{}, &fakeLine{}
		var st [2]LineStats
		l := newLineRecv(a, b, lineSrcA, lineSrcB, &st, func(int, bool) {}).(*lineRecv)
		var sent [2]uint64
		for len(in) >= 2 {
			line, n := int(in[0]&1), min(int(in[1]), len(in)-2)
			if in[0]&2 != 0 {
				l.epoch = l.epoch.Add(-20 * time.Millisecond) // the clock jumps
			}
			buf := append([]byte(nil), in[2:2+n]...)
			q := &a.q
			if line == 1 {
				q = &b.q
			}
			*q = append(*q, Message{Buf: buf, N: n, Addr: netip.AddrPortFrom(lineSrcB, 1)})
			sent[line]++
			in = in[2+n:]
			ms := make([]Message, 4)
			for i := range ms {
				ms[i].Buf = make([]byte, 256)
			}
			for {
				k, err := l.RecvBatch(ms, 0)
				if err != nil {
					t.Fatal(err)
				}
				if k == 0 {
					break
				}
			}
		}
		for i := range st {
			var late uint64
			for _, v := range st[i].LateBy {
				late += v
			}
			if st[i].Received != sent[i] || late != st[i].Late || st[i].First+st[i].Late > sent[i] {
				t.Fatalf("line %d: %+v after %d datagrams", i, st[i], sent[i])
			}
		}
	})
}
