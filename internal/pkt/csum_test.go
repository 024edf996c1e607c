package pkt

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// refSum is RFC 1071 sum over 16-bit words, the obvious way.
func refSum(b []byte, initial uint32) uint32 {
	s := uint64(initial)
	for i := 0; i+1 < len(b); i += 2 {
		s += uint64(b[i])<<8 | uint64(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint64(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s>>16 + s&0xffff
	}
	return uint32(s)
}

func TestSumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		for _, fill := range []string{"rand", "ff", "00"} {
			b := make([]byte, n)
			for i := range b {
				switch fill {
				case "rand":
					b[i] = byte(r.Uint32())
				case "ff":
					b[i] = 0xff
				}
			}
			for _, init := range []uint32{0, 1, 0xffff, 0x1fffe, r.Uint32(), 0xffffffff} {
				if got, want := Sum(b, init), refSum(b, init); got != want {
					t.Fatalf("Sum(%d bytes of %s, %#x) = %#x, want %#x", n, fill, init, got, want)
				}
			}
		}
	}
	big := make([]byte, 65535)
	for i := range big {
		big[i] = 0xff
	}
	if got, want := Sum(big, 0xffffffff), refSum(big, 0xffffffff); got != want {
		t.Fatalf("Sum(64 KiB of ff) = %#x, want %#x", got, want)
	}
}

func TestSumChainAndChecksum(t *testing.T) {
	b := []byte{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7}
	// Known answer: the classic example header has checksum 0xb861.
	if c := Checksum(b, 0); c != 0xb861 {
		t.Fatalf("Checksum = %#04x, want 0xb861", c)
	}
	if s := Sum(b[6:], Sum(b[:6], 0)); s != Sum(b, 0) {
		t.Errorf("chained Sum %#x != Sum %#x", s, Sum(b, 0))
	}
	b[10], b[11] = 0xb8, 0x61
	if s := Sum(b, 0); s != 0xffff {
		t.Errorf("Sum over header with checksum = %#x, want 0xffff", s)
	}
	if Sum(nil, 0) != 0 || Fold(0x1fffe) != 0xffff || Fold(0x10000) != 1 {
		t.Errorf("Sum(nil)=%#x Fold(0x1fffe)=%#x Fold(0x10000)=%#x", Sum(nil, 0), Fold(0x1fffe), Fold(0x10000))
	}
}

func BenchmarkSum(b *testing.B) {
	for _, n := range []int{20, 64, 1472, 9000} {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				_ = Sum(buf, 0)
			}
		})
	}
}
