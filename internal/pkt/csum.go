package pkt

import (
	"encoding/binary"
	"math/bits"
)

// Sum returns the Internet (RFC 1071) one's complement sum of b, read as
// big-endian 16-bit words, added to initial and folded to 16 bits (the
// result is at most 0xffff). It is not inverted.
//
// A trailing odd byte is summed as if followed by a zero byte, so sums may
// be chained, Sum(b2, Sum(b1, 0)), only when every chunk but the last has
// even length. initial may be any uint32 (for instance the sum of several
// earlier results); it is folded in.
//
// The sum of any bytes that are not all zero is never 0: as in the kernel,
// the "negative zero" 0xffff is returned instead.
func Sum(b []byte, initial uint32) uint32 {
	// RFC 1071 section 2(B): a sum of 16-bit words read in the other byte
	// order is the byte-swapped sum. Reading native little-endian words
	// spares a byte swap per load; initial goes in and the result comes out
	// swapped.
	acc := uint64(bits.ReverseBytes16(uint16(fold64(uint64(initial)))))
	var c uint64
	for len(b) >= 64 {
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[8:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[16:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[24:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[32:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[40:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[48:]), c)
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b[56:]), c)
		b = b[64:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.LittleEndian.Uint64(b), c)
		b = b[8:]
	}
	// The last 0..7 bytes, zero-padded: a trailing odd byte is the low
	// byte of a little-endian word, the high byte of a big-endian one.
	acc, c = bits.Add64(acc, tail(b), c)
	// acc+c cannot overflow: after a carry-out acc <= 2^64-2.
	return uint32(bits.ReverseBytes16(uint16(fold64(acc + c))))
}

// tail returns the last 0..7 bytes of a buffer as a little-endian 64-bit
// word, zero-padded, so 16-bit word boundaries are preserved.
func tail(b []byte) uint64 {
	var w uint64
	shift := uint(0) // where the next bytes go
	if len(b) >= 4 {
		w = uint64(binary.LittleEndian.Uint32(b))
		b, shift = b[4:], 32
	}
	if len(b) >= 2 {
		w |= uint64(binary.LittleEndian.Uint16(b)) << shift
		b, shift = b[2:], shift+16
	}
	if len(b) == 1 {
		w |= uint64(b[0]) << shift
	}
	return w
}

// fold64 folds a 64-bit one's complement sum to 16 bits with end-around
// carries.
func fold64(s uint64) uint32 {
	s = (s >> 32) + (s & 0xffffffff) // < 2^33
	s = (s >> 32) + (s & 0xffffffff) // < 2^32
	s = (s >> 16) + (s & 0xffff)     // < 2^17
	s = (s >> 16) + (s & 0xffff)     // <= 0xffff
	return uint32(s)
}

// Fold folds a 32-bit one's complement sum (for instance a total of several
// Sum results) to 16 bits, not inverted.
func Fold(s uint32) uint16 { return uint16(fold64(uint64(s))) }

// Checksum returns the Internet checksum of b started from initial: the
// inverted Sum. A header whose checksum field is filled with it sums to
// 0xffff. See Sum for odd lengths.
func Checksum(b []byte, initial uint32) uint16 {
	return ^uint16(Sum(b, initial))
}

// pseudoSum returns the unfolded sum of the IPv4 pseudo-header for UDP:
// addresses, protocol 17 and the UDP length.
func pseudoSum(src, dst [4]byte, udpLen int) uint32 {
	return uint32(binary.BigEndian.Uint16(src[:2])) + uint32(binary.BigEndian.Uint16(src[2:])) +
		uint32(binary.BigEndian.Uint16(dst[:2])) + uint32(binary.BigEndian.Uint16(dst[2:])) +
		protoUDP + uint32(udpLen)
}
