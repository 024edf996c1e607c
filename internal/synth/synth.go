package synth

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MinSize is the smallest record: seq, timestamp, checksum and one word of
// filler.
const MinSize = 32

// Field offsets.
const (
	offSeq      = 0
	offTime     = 8
	offChecksum = 16
	offFiller   = 24
)

var (
	// ErrChecksum marks a record whose stored checksum does not match its
	// contents.
	ErrChecksum = errors.New("synth: checksum mismatch")
	// ErrShort marks a buffer shorter than MinSize.
	ErrShort = errors.New("synth: record shorter than the minimum size")
)

const (
	hashSeed   = 0x9e3779b97f4a7c15
	hashMul    = 0xff51afd7ed558ccd
	fillerStep = 0xd1b54a32d192ed03
)

var le = binary.LittleEndian

// Fill writes a record for sequence seq stamped tsNanos into all of buf.
// It panics if buf is shorter than MinSize.
func Fill(buf []byte, seq, tsNanos uint64) {
	if len(buf) < MinSize {
		panic(fmt.Sprintf("synth: Fill of a %d-byte buffer, minimum %d", len(buf), MinSize))
	}
	le.PutUint64(buf[offSeq:], seq)
	le.PutUint64(buf[offTime:], tsNanos)
	fill(buf[offFiller:], seq)
	le.PutUint64(buf[offChecksum:], checksum(buf))
}

// Check validates the record in buf and returns its sequence and timestamp.
// A buffer shorter than MinSize returns ErrShort; a record that fails its
// checksum returns an error wrapping ErrChecksum, with seq and ts as stored
// (not to be trusted).
func Check(buf []byte) (seq, ts uint64, err error) {
	if len(buf) < MinSize {
		return 0, 0, fmt.Errorf("%w: %d bytes, want at least %d", ErrShort, len(buf), MinSize)
	}
	seq, ts = le.Uint64(buf[offSeq:]), le.Uint64(buf[offTime:])
	if stored, sum := le.Uint64(buf[offChecksum:]), checksum(buf); stored != sum {
		return seq, ts, fmt.Errorf("%w: record seq %d: stored %#016x, computed %#016x", ErrChecksum, seq, stored, sum)
	}
	return seq, ts, nil
}

// fill writes the filler derived from seq: a splitmix64 stream.
func fill(b []byte, seq uint64) {
	x := seq
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x += fillerStep
		le.PutUint64(b[i:], mix(x))
	}
	if i < len(b) {
		x += fillerStep
		w := mix(x)
		for j := i; j < len(b); j++ {
			b[j] = byte(w)
			w >>= 8
		}
	}
}

// checksum hashes every word of buf except the checksum word.
func checksum(buf []byte) uint64 {
	h := uint64(hashSeed)
	h = step(h, le.Uint64(buf[offSeq:]))
	h = step(h, le.Uint64(buf[offTime:]))
	i := offFiller
	for ; i+8 <= len(buf); i += 8 {
		h = step(h, le.Uint64(buf[i:]))
	}
	if i < len(buf) {
		var w uint64
		for j := len(buf) - 1; j >= i; j-- {
			w = w<<8 | uint64(buf[j])
		}
		h = step(h, w)
	}
	return mix(h)
}

// step folds word w into state h. For a fixed w it is a bijection of h
// (xor, multiply by an odd constant, xorshift), and for a fixed h a
// bijection of w, so two inputs differing in one word never collide.
func step(h, w uint64) uint64 {
	h ^= w
	h *= hashMul
	return h ^ h>>32
}

// mix is the splitmix64 finaliser, a bijection.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
