package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
)

// Overhead is what sealing adds to a datagram: the tag and the counter.
const Overhead = tagSize + 8

const (
	tagSize    = 16
	headerSize = 16 // the frame header: the additional data when encrypting
	window     = 1024
)

// aeadOf makes the AES-256-GCM of a key.
func aeadOf(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Sealer seals the datagrams of one sender.
type Sealer struct {
	aead    cipher.AEAD
	encrypt bool
	next    uint64 // the next datagram's counter
	nonce   [12]byte
	tag     [tagSize]byte
}

// Opener checks and opens the datagrams of one sealer.
type Opener struct {
	aead    cipher.AEAD
	encrypt bool
	nonce   [12]byte
	scratch [tagSize]byte
	top     uint64              // highest counter accepted (0: none yet)
	seen    [window / 64]uint64 // bit c%window: counter c accepted (for c in top-window+1..top)
}

// Datagrams returns the sealer and a function making openers of a source
// incarnation's datagrams (encrypt: payloads are ciphertext).
func (k *Key) Datagrams(incarnation []byte, encrypt bool) (*Sealer, func() *Opener, error) {
	key, err := k.datagramKey(incarnation)
	if err != nil {
		return nil, nil, err
	}
	return NewPair(key, encrypt)
}

// NewPair returns a sealer and an opener maker for a 32-byte key (a
// PUNCH key from the TLS exporter, or a datagram key).
func NewPair(key []byte, encrypt bool) (*Sealer, func() *Opener, error) {
	a, err := aeadOf(key)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	s := &Sealer{aead: a, encrypt: encrypt, next: 1}
	return s, func() *Opener { return &Opener{aead: a, encrypt: encrypt} }, nil
}

// Seal appends the trailer to frame (a whole frame: header, then payload)
// and, when encrypting, encrypts the payload in place. frame needs
// Overhead bytes of spare capacity, or Seal allocates.
func (s *Sealer) Seal(frame []byte) []byte {
	if cap(frame)-len(frame) < Overhead {
		frame = append(make([]byte, 0, len(frame)+Overhead), frame...)
	}
	c := s.next
	s.next++
	binary.LittleEndian.PutUint64(s.nonce[4:], c)
	if s.encrypt {
		hdr, p := frame[:headerSize], frame[headerSize:]
		sealed := s.aead.Seal(p[:0], s.nonce[:], p, hdr) // in place: p's storage, then the tag
		frame = frame[:headerSize+len(sealed)]
	} else {
		frame = append(frame, s.aead.Seal(s.tag[:0], s.nonce[:], nil, frame)...)
	}
	return binary.LittleEndian.AppendUint64(frame, c)
}

// Open checks a sealed datagram and returns its frame (decrypted in place
// when encrypted). A datagram that fails its tag is ErrTag, one whose
// counter was accepted before, or fell behind the window, ErrReplay.
func (o *Opener) Open(b []byte) ([]byte, error) {
	if len(b) < headerSize+Overhead {
		return nil, fmt.Errorf("%w: %d bytes", ErrShort, len(b))
	}
	n := len(b) - 8
	c := binary.LittleEndian.Uint64(b[n:])
	if !o.fresh(c) {
		return nil, ErrReplay
	}
	binary.LittleEndian.PutUint64(o.nonce[4:], c)
	frame := b[:n-tagSize]
	if o.encrypt {
		hdr := b[:headerSize]
		if _, err := o.aead.Open(b[headerSize:headerSize], o.nonce[:], b[headerSize:n], hdr); err != nil {
			return nil, ErrTag
		}
	} else if _, err := o.aead.Open(o.scratch[:0], o.nonce[:], b[n-tagSize:n], frame); err != nil {
		return nil, ErrTag
	}
	o.accept(c)
	return frame, nil
}

// fresh: counter c was not accepted yet and is within the window.
func (o *Opener) fresh(c uint64) bool {
	switch {
	case c == 0:
		return false
	case c > o.top:
		return true
	case o.top-c >= window:
		return false
	}
	return o.seen[(c%window)/64]&(1<<(c%64)) == 0
}

// accept records counter c (after its tag passed).
func (o *Opener) accept(c uint64) {
	if c > o.top {
		if c-o.top >= window {
			o.seen = [window / 64]uint64{}
		} else {
			for x := o.top + 1; x < c; x++ { // counters skipped: not seen
				o.seen[(x%window)/64] &^= 1 << (x % 64)
			}
		}
		o.top = c
	}
	o.seen[(c%window)/64] |= 1 << (c % 64)
}
