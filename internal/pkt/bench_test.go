package pkt_test

import (
	"strconv"
	"testing"

	"github.com/ringfire/ringfire/internal/pkt"
)

var benchSizes = []int{64, 1472}

func BenchmarkBuild(b *testing.B) {
	h := testHeader(0)
	for _, n := range benchSizes {
		payload, frame := payloadOf(n), make([]byte, 1518)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Build(frame, payload, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTemplateBuild(b *testing.B) {
	tp, err := pkt.NewTemplate(testHeader(0))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range benchSizes {
		payload, frame := payloadOf(n), make([]byte, 1518)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if tp.Build(frame, payload, 1) == 0 {
					b.Fatal("short")
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, n := range benchSizes {
		frame := build(b, testHeader(0), payloadOf(n), 1)
		var p pkt.Packet
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if err := pkt.Parse(frame, &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
