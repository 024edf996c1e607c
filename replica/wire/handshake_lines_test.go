package wire

import (
	"bytes"
	"errors"
	"testing"
)

// A MULTICAST without a key is byte for byte what it was before line B
// (the header's seq 0); a unicast line B's carries its key in the seq.
func TestMulticastKeyBytes(t *testing.T) {
	m := Multicast{Port: 7600, MTU: DefaultMTU, TTL: 1, Session: 3, Token: 0x0A000102}
	old := []byte{7, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0xB0, 0x1D, 0xC0, 0x05, 1, 3, 2, 1, 0, 10, 0, 0}
	if got := AppendMulticast(nil, m); !bytes.Equal(got, old) {
		t.Fatalf("MULTICAST without a key:\n%x\nwant\n%x", got, old)
	}
	m.Key = 0x1122334455667788
	b := AppendMulticast(nil, m)
	h, err := ParseHeader(b, MulticastSize)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseLineB(h, b[HeaderSize:])
	if err != nil || got != m {
		t.Fatalf("ParseLineB: %+v, %v, want %+v", got, err, m)
	}
	for _, c := range []struct {
		name string
		edit func(*Multicast)
	}{
		{"no key", func(m *Multicast) { m.Key = 0 }},
		{"no source", func(m *Multicast) { m.Token = 0 }},
		{"group with a key", func(m *Multicast) { m.Group = [4]byte{239, 255, 1, 1} }},
	} {
		bad := m
		c.edit(&bad)
		b := AppendMulticast(nil, bad)
		h, _ := ParseHeader(b, MulticastSize)
		if _, err := ParseLineB(h, b[HeaderSize:]); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseLineB: %v, want ErrMalformed", c.name, err)
		}
	}
}

// A line B PUNCH is line A's with the line in the count and the key in
// the seq; line A's PUNCH is not one.
func TestLinePunchBytes(t *testing.T) {
	b := AppendLinePunch(nil, 9, 0x0102030405060708)
	want := []byte{8, 9, 1, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}
	if !bytes.Equal(b, want) {
		t.Fatalf("line B PUNCH %x, want %x", b, want)
	}
	if s, k, err := ParseLinePunch(b); err != nil || s != 9 || k != 0x0102030405060708 {
		t.Fatalf("ParseLinePunch: %d %#x %v", s, k, err)
	}
	for _, bad := range [][]byte{AppendEmpty(nil, KindPunch, 9, 0xAABBCCDD), AppendLinePunch(nil, 9, 0), b[:15],
		append(AppendLinePunch(nil, 9, 5), 0)} {
		if _, _, err := ParseLinePunch(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseLinePunch(%x): %v, want ErrMalformed", bad, err)
		}
	}
}

// FuzzParseLineB: a line B MULTICAST is accepted only as a group without
// a key or a unicast line with its source and key, and re-encodes to the
// same bytes.
func FuzzParseLineB(f *testing.F) {
	f.Add(AppendMulticast(nil, Multicast{Port: 7600, MTU: DefaultMTU, Session: 3, Token: 0x0A000102, Key: 7}))
	f.Add(AppendMulticast(nil, Multicast{Group: [4]byte{239, 255, 1, 1}, Port: 7501, MTU: DefaultMTU}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b, MulticastSize)
		if err != nil || h.Kind != KindMulticast || len(b) < HeaderSize+MulticastSize {
			return
		}
		m, err := ParseLineB(h, b[HeaderSize:HeaderSize+MulticastSize])
		if err != nil {
			if !fzCodecErr(err) {
				t.Fatalf("ParseLineB: %v", err)
			}
			return
		}
		if m.Unicast() != (m.Key != 0) || m.Unicast() && m.Token == 0 {
			t.Fatalf("line B %+v accepted", m)
		}
		again := AppendMulticast(nil, m)
		if m2, err := ParseLineB(h, again[HeaderSize:]); err != nil || m2 != m {
			t.Fatalf("re-encoded %+v: %+v, %v", m, m2, err)
		}
	})
}

// FuzzParseLinePunch: only a whole line B PUNCH header with a key is
// accepted, and it re-encodes to the same bytes.
func FuzzParseLinePunch(f *testing.F) {
	f.Add(AppendLinePunch(nil, 3, 0xDEADBEEF))
	f.Add(AppendEmpty(nil, KindPunch, 3, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, k, err := ParseLinePunch(b)
		if err != nil {
			if !fzCodecErr(err) {
				t.Fatalf("ParseLinePunch: %v", err)
			}
			return
		}
		if k == 0 || !bytes.Equal(AppendLinePunch(nil, s, k), b) {
			t.Fatalf("line B PUNCH %x accepted as session %d key %#x", b, s, k)
		}
	})
}
