package wire

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestSessionRoundTrip(t *testing.T) {
	var s Session
	for i := range s.Incarnation {
		s.Incarnation[i] = byte(i * 7)
	}
	s.ID, s.Encrypt = binary.LittleEndian.Uint64(s.Incarnation[:]), true
	b := AppendSession(nil, s)
	h, err := ParseHeader(b, SessionSize)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSession(h, b[HeaderSize:])
	if err != nil || got != s {
		t.Fatalf("got %+v, %v; want %+v", got, err, s)
	}
	b[8] ^= 1 // the id no longer matches the incarnation
	h, _ = ParseHeader(b, SessionSize)
	if _, err := ParseSession(h, b[HeaderSize:]); err == nil {
		t.Fatal("a SESSION whose id is not its incarnation's passed")
	}
}

func TestErrorFrame(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes: cut on a character boundary
	b := AppendError(nil, long)
	h, err := ParseHeader(b, MaxErrorLen)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := ParseError(b[HeaderSize : HeaderSize+int(h.Len)])
	if err != nil || len(msg) > MaxErrorLen || !strings.HasPrefix(long, msg) {
		t.Fatalf("message %d bytes, %v", len(msg), err)
	}
	if _, err := ParseError([]byte{0xff, 0xfe}); err == nil {
		t.Fatal("an ERROR that is not UTF-8 passed")
	}
}

func FuzzKeyedFrames(f *testing.F) {
	f.Add(AppendSession(nil, Session{}))
	f.Add(AppendError(nil, "this source requires a key"))
	f.Add([]byte{10, 1, 0, 0, 32, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b, MaxErrorLen)
		if err != nil || len(b) < HeaderSize+int(h.Len) {
			return
		}
		p := b[HeaderSize : HeaderSize+int(h.Len)]
		switch h.Kind {
		case KindSession:
			s, err := ParseSession(h, p)
			if err == nil && !bytes.Equal(AppendSession(nil, s), b[:HeaderSize+SessionSize]) {
				t.Fatalf("SESSION %+v does not encode back to its bytes", s)
			}
		case KindError:
			if msg, err := ParseError(p); err == nil && len(msg) != len(p) {
				t.Fatalf("ERROR message of %d bytes from %d", len(msg), len(p))
			}
		}
	})
}
