package wire

// The STATUS codec: layout, round trip, strict parsing, and its fuzz
// target.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStatusLayout(t *testing.T) {
	st := Status{Applied: 0x0102030405060708, Interval: 100 * time.Millisecond, Lag: 1, Naks: 2,
		Retransmitted: 3, Gaps: 4, Drops: 5, ID: 6, Transport: "udp multicast", Name: "host:m"}
	b := AppendStatus(nil, st)
	if len(b) != HeaderSize+96 {
		t.Fatalf("STATUS of %d bytes", len(b))
	}
	want := []byte{9, 0, 100, 0, 96, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}
	if !bytes.Equal(b[:HeaderSize], want) {
		t.Fatalf("header % x, want % x", b[:HeaderSize], want)
	}
	p := b[HeaderSize:]
	for i, v := range []uint64{1, 2, 3, 4, 5, 6} {
		if got := binary.LittleEndian.Uint64(p[8*i:]); got != v {
			t.Errorf("u64 @%d = %d, want %d", 8*i, got, v)
		}
	}
	if !bytes.Equal(p[48:64], append([]byte("udp multicast"), 0, 0, 0)) || string(bytes.TrimRight(p[64:], "\x00")) != "host:m" {
		t.Errorf("text fields % x", p[48:])
	}
	h, err := ParseHeader(b, 96)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStatus(h, p)
	if err != nil || got != st {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, st)
	}
	if KindStatus.String() != "STATUS" || HelloTelemetry != 4 || GeometryTelemetry != 4 {
		t.Errorf("names or bits: %v %d %d", KindStatus, HelloTelemetry, GeometryTelemetry)
	}
}

func TestStatusCutsFields(t *testing.T) {
	long := strings.Repeat("é", 20) // 40 bytes: cut to 32 on a character boundary
	b := AppendStatus(nil, Status{Interval: time.Hour, Transport: "xdpgen multicast+", Name: long})
	h, _ := ParseHeader(b, 96)
	st, err := ParseStatus(h, b[HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != strings.Repeat("é", 16) || st.Transport != "xdpgen multicast" || st.Interval != 65535*time.Millisecond {
		t.Errorf("cut: %+v", st)
	}
	b = AppendStatus(nil, Status{})
	if h, _ := ParseHeader(b, 96); h.Count != 1 {
		t.Errorf("interval 0 sent as %d ms, want 1", h.Count)
	}
}

func TestParseStatusRejects(t *testing.T) {
	good := AppendStatus(nil, Status{Interval: time.Second, Transport: "tcp", Name: "n"})
	h, _ := ParseHeader(good, 96)
	mut := func(f func(h *Header, p []byte)) (Header, []byte) {
		p := bytes.Clone(good[HeaderSize:])
		hh := h
		f(&hh, p)
		return hh, p
	}
	cases := map[string]func(h *Header, p []byte){
		"interval 0":        func(h *Header, p []byte) { h.Count = 0 },
		"flags":             func(h *Header, p []byte) { h.Flags = 1 },
		"other kind":        func(h *Header, p []byte) { h.Kind = KindNak },
		"after padding":     func(h *Header, p []byte) { p[60] = 'x' },
		"name not UTF-8":    func(h *Header, p []byte) { p[64] = 0xFF },
		"name after pad":    func(h *Header, p []byte) { p[95] = 1 },
		"transport invalid": func(h *Header, p []byte) { p[48] = 0xC3; p[49] = 0 },
	}
	for name, f := range cases {
		hh, p := mut(f)
		if _, err := ParseStatus(hh, p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := ParseStatus(h, good[HeaderSize:HeaderSize+95]); !errors.Is(err, ErrMalformed) {
		t.Errorf("95 bytes: %v", err)
	}
	for _, n := range []uint32{0, 95, 97} {
		var b [HeaderSize]byte
		Header{Kind: KindStatus, Count: 1, Len: n}.Put(b[:])
		if _, err := ParseHeader(b[:], 1<<10); !errors.Is(err, ErrMalformed) {
			t.Errorf("STATUS header of length %d: %v", n, err)
		}
	}
	var b [HeaderSize]byte
	Header{Kind: 10}.Put(b[:])
	if _, err := ParseHeader(b[:], 64); !errors.Is(err, ErrMalformed) {
		t.Errorf("kind 10 accepted: %v", err)
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add(AppendStatus(nil, Status{Applied: 7, Interval: 100 * time.Millisecond, Lag: 3, ID: 9, Transport: "tcp", Name: "a:b"}))
	f.Add(AppendStatus(nil, Status{Transport: "udp unicast", Name: strings.Repeat("x", 40)}))
	f.Add(make([]byte, HeaderSize+96))
	f.Add(AppendStatus(nil, linesStatus()))
	f.Add(AppendStatus(nil, Status{HasLines: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b, StatusLinesSize)
		if err != nil || h.Kind != KindStatus || len(b) < HeaderSize+int(h.Len) {
			return
		}
		p := b[HeaderSize : HeaderSize+int(h.Len)]
		st, err := ParseStatus(h, p)
		if err != nil {
			if !fzCodecErr(err) {
				t.Fatalf("error %v wraps no codec error", err)
			}
			return
		}
		if st.HasLines != (len(p) == StatusLinesSize) {
			t.Fatalf("%d bytes parsed with HasLines %v", len(p), st.HasLines)
		}
		// Parsing after any earlier STATUS gives the same result.
		for _, prev := range []Status{st, {Transport: "tcp", Name: "x"}, linesStatus()} {
			if again, err := ParseStatusAfter(h, p, prev); err != nil || again != st {
				t.Fatalf("after %+v: %+v, %v; want %+v", prev, again, err, st)
			}
		}
		// What parses re-encodes to the same bytes.
		out := AppendStatus(nil, st)
		if !bytes.Equal(out, b[:HeaderSize+len(p)]) {
			t.Fatalf("round trip\n% x\n% x", b[:HeaderSize+len(p)], out)
		}
	})
}
