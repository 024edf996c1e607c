package pkt_test

import (
	"bytes"
	"testing"

	"github.com/ringfire/ringfire/internal/pkt"
)

func FuzzParse(f *testing.F) {
	good := build(f, testHeader(0), payloadOf(20), 1)
	f.Add(good)
	f.Add(tagged(good, 0x8100, 7))
	f.Add(withOptions(good))
	f.Add(partial(good, pkt.EthLen))
	f.Add(good[:41])
	f.Fuzz(func(t *testing.T, frame []byte) {
		var p pkt.Packet
		if err := pkt.Parse(frame, &p); err != nil {
			return
		}
		h := pkt.Header{Dst: p.Dst, Src: p.Src, VLAN: p.VLAN, SrcAddr: p.SrcAddr, DstAddr: p.DstAddr, TTL: p.TTL}
		if h.VLAN > 4094 { // VID 4095 parses but cannot be built
			return
		}
		out := make([]byte, h.Len()+len(p.Payload))
		if _, err := h.Build(out, p.Payload, 0); err != nil {
			t.Fatalf("Build of a parsed packet: %v", err)
		}
		var q pkt.Packet
		if err := pkt.Parse(out, &q); err != nil {
			t.Fatalf("Parse of the rebuilt frame: %v", err)
		}
		want := p
		if want.TTL == 0 {
			want.TTL = 64 // Header TTL 0 means 64
		}
		if !samePacket(q, want) || !bytes.Equal(q.Payload, p.Payload) {
			t.Fatalf("rebuilt parse %+v, want %+v", q, want)
		}
	})
}
