package wire

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// The frames of the keyed and wide-session extensions (docs/protocol.md,
// "Keyed replication", "Wide session").
const (
	// SessionSize is the SESSION payload: the 32-byte incarnation.
	SessionSize = 32
	// MaxErrorLen bounds an ERROR frame's message.
	MaxErrorLen = 256
	// SessionEncrypt is SESSION's flag: datagram payloads are encrypted.
	SessionEncrypt uint8 = 1 << 0
	// SessionTrailer: the datagrams to this mirror end with the session
	// id, 8 bytes little-endian, after the frame (the wide session of a
	// connection without a key).
	SessionTrailer uint8 = 1 << 1
	// TrailerSize is the size of that trailer.
	TrailerSize = 8
)

// Session is the SESSION frame: the source incarnation, from which both
// ends derive the datagram key, and its 64-bit session identifier.
type Session struct {
	ID          uint64 // the incarnation's first 8 bytes (header seq)
	Encrypt     bool
	Trailer     bool // datagrams carry ID in a trailer (SessionTrailer)
	Incarnation [SessionSize]byte
}

// AppendSession appends a SESSION frame.
func AppendSession(b []byte, s Session) []byte {
	var flags uint8
	if s.Encrypt {
		flags |= SessionEncrypt
	}
	if s.Trailer {
		flags |= SessionTrailer
	}
	b = appendHeader(b, Header{Kind: KindSession, Flags: flags, Len: SessionSize, Seq: s.ID})
	return append(b, s.Incarnation[:]...)
}

// ParseSession decodes a SESSION frame: the identifier must be the
// incarnation's first 8 bytes.
func ParseSession(h Header, p []byte) (Session, error) {
	if len(p) != SessionSize {
		return Session{}, fmt.Errorf("%w: SESSION of %d bytes", ErrMalformed, len(p))
	}
	s := Session{ID: h.Seq, Encrypt: h.Flags&SessionEncrypt != 0, Trailer: h.Flags&SessionTrailer != 0}
	copy(s.Incarnation[:], p)
	if binary.LittleEndian.Uint64(p) != h.Seq || h.Flags&^(SessionEncrypt|SessionTrailer) != 0 || h.Count != 0 {
		return s, fmt.Errorf("%w: SESSION id %#x, flags %#x or count %d do not match its incarnation", ErrMalformed, h.Seq, h.Flags, h.Count)
	}
	return s, nil
}

// AppendError appends an ERROR frame carrying msg (cut to MaxErrorLen
// bytes on a character boundary).
func AppendError(b []byte, msg string) []byte {
	for len(msg) > MaxErrorLen {
		_, n := utf8.DecodeLastRuneInString(msg)
		msg = msg[:len(msg)-n]
	}
	b = appendHeader(b, Header{Kind: KindError, Len: uint32(len(msg))})
	return append(b, msg...)
}

// ParseError decodes an ERROR frame's message.
func ParseError(p []byte) (string, error) {
	if len(p) > MaxErrorLen || !utf8.Valid(p) {
		return "", fmt.Errorf("%w: ERROR of %d bytes, or not UTF-8", ErrMalformed, len(p))
	}
	return string(p), nil
}
