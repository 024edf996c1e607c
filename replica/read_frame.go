package replica

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/ringfire/ringfire/replica/wire"
)

// readFrameFrom reads one whole frame of at most maxLen payload bytes.
func readFrameFrom(br *bufio.Reader, maxLen int) (wire.Header, []byte, error) {
	return readFrameInto(br, maxLen, nil)
}

// readFrameInto is readFrameFrom that reads the payload into buf when it
// fits (a reader of many small frames allocates nothing); the payload is
// valid until buf is used again.
func readFrameInto(br *bufio.Reader, maxLen int, buf []byte) (wire.Header, []byte, error) {
	var hb [wire.HeaderSize]byte
	if _, err := io.ReadFull(br, hb[:]); err != nil {
		return wire.Header{}, nil, eofErr(err)
	}
	h, err := wire.ParseHeader(hb[:], maxLen)
	if err != nil {
		return h, nil, err
	}
	p := buf[:0]
	if cap(p) < int(h.Len) {
		p = make([]byte, h.Len)
	}
	p = p[:h.Len]
	if _, err := io.ReadFull(br, p); err != nil {
		return h, nil, payloadErr(err)
	}
	return h, p, nil
}

// payloadErr is eofErr for a payload's read: after a whole header, the
// end of the stream is mid-frame, not between frames.
func payloadErr(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return eofErr(err)
}

// eofErr names a peer's disconnection: cleanly between frames
// (ErrPeerClosed) or in the middle of one (ErrTruncated).
func eofErr(err error) error {
	if err == io.EOF {
		return ErrPeerClosed
	}
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: the peer disconnected mid-frame", ErrTruncated)
	}
	return err
}

// protocolErr reports whether err is the peer breaking the protocol.
func protocolErr(err error) bool {
	for _, e := range []error{wire.ErrMalformed, wire.ErrTooLarge, wire.ErrMagic, wire.ErrVersion, ErrTruncated} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
