package wire

// The STATUS of a mirror of two lines: layout, a STATUS without lines
// unchanged, strict parsing.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// linesStatus is a STATUS with every line counter distinct.
func linesStatus() Status {
	return Status{Applied: 9, Interval: 100 * time.Millisecond, Lag: 1, ID: 6, Transport: "udp+xdp", Name: "m",
		HasLines: true, Lines: [2]StatusLine{
			{Transport: "udp", Up: true, Received: 11, First: 12, Late: 13, Lost: 14, Downs: 15, Ups: 16, Errors: 17,
				LateBy: [StatusLateBuckets]uint64{18, 19, 20, 21, 22}},
			{Transport: "xdp", Received: 31, First: 32, Late: 33, Lost: 34, Downs: 35, Ups: 36, Errors: 37,
				LateBy: [StatusLateBuckets]uint64{38, 39, 40, 41, 42}},
		}}
}

func TestStatusLinesLayout(t *testing.T) {
	st := linesStatus()
	b := AppendStatus(nil, st)
	if len(b) != HeaderSize+StatusLinesSize || StatusLinesSize != 336 {
		t.Fatalf("STATUS of %d bytes, StatusLinesSize %d; want %d, 336", len(b), StatusLinesSize, HeaderSize+336)
	}
	if n := binary.LittleEndian.Uint32(b[4:]); n != 336 {
		t.Fatalf("header length %d, want 336", n)
	}
	// The first 96 bytes are those of the same STATUS without lines.
	old := st
	old.HasLines, old.Lines = false, [2]StatusLine{}
	ob := AppendStatus(nil, old)
	if len(ob) != HeaderSize+96 || !bytes.Equal(ob[8:], b[8:HeaderSize+96]) || !bytes.Equal(ob[:4], b[:4]) {
		t.Fatalf("base of the STATUS changed:\n% x\n% x", ob, b[:HeaderSize+96])
	}
	p := b[HeaderSize+StatusSize:]
	for i, base := range []uint64{11, 31} {
		q := p[120*i:]
		for k := range 12 {
			if got := binary.LittleEndian.Uint64(q[8*k:]); got != base+uint64(k) {
				t.Errorf("line %d u64 @%d = %d, want %d", i, 8*k, got, base+uint64(k))
			}
		}
		if got, want := binary.LittleEndian.Uint64(q[96:]), uint64(1-i); got != want {
			t.Errorf("line %d state %d, want %d", i, got, want)
		}
		if got := string(bytes.TrimRight(q[104:120], "\x00")); got != st.Lines[i].Transport {
			t.Errorf("line %d transport %q", i, got)
		}
	}
	h, err := ParseHeader(b, StatusLinesSize)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStatus(h, b[HeaderSize:])
	if err != nil || got != st {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, st)
	}
	// A reader of 96-byte STATUS (an old source's limit) refuses it.
	if _, err := ParseHeader(b, StatusSize); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a source limited to 96 bytes: %v, want ErrTooLarge", err)
	}
}

func TestParseStatusLinesRejects(t *testing.T) {
	good := AppendStatus(nil, linesStatus())
	h, _ := ParseHeader(good, StatusLinesSize)
	cases := map[string]func(p []byte){
		"state bit 1":         func(p []byte) { p[StatusSize+96] = 2 },
		"line B state high":   func(p []byte) { p[StatusSize+120+103] = 0x80 },
		"line A transport":    func(p []byte) { p[StatusSize+104] = 0xFF },
		"line B after pad":    func(p []byte) { p[StatusLinesSize-1] = 'x' },
		"base name after pad": func(p []byte) { p[95] = 1 },
	}
	for name, f := range cases {
		p := bytes.Clone(good[HeaderSize:])
		f(p)
		if _, err := ParseStatus(h, p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	for _, n := range []uint32{97, StatusLinesSize - 1, StatusLinesSize + 1, StatusSize + 120} {
		var b [HeaderSize]byte
		Header{Kind: KindStatus, Count: 1, Len: n}.Put(b[:])
		if _, err := ParseHeader(b[:], 1<<10); !errors.Is(err, ErrMalformed) {
			t.Errorf("STATUS header of length %d: %v", n, err)
		}
		if _, err := ParseStatus(Header{Kind: KindStatus, Count: 1, Len: n}, make([]byte, n)); !errors.Is(err, ErrMalformed) {
			t.Errorf("STATUS payload of %d bytes: %v", n, err)
		}
	}
	// Another kind of the same length stays refused.
	var b [HeaderSize]byte
	Header{Kind: KindNak, Len: StatusLinesSize}.Put(b[:])
	if _, err := ParseHeader(b[:], 1<<10); !errors.Is(err, ErrMalformed) {
		t.Errorf("NAK of %d bytes: %v", StatusLinesSize, err)
	}
}

// A STATUS parsed after one with the same line names reuses them: a
// mirror's STATUS every interval allocates nothing.
func TestParseStatusLinesAllocs(t *testing.T) {
	b := AppendStatus(nil, linesStatus())
	h, _ := ParseHeader(b, StatusLinesSize)
	prev, err := ParseStatus(h, b[HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { ParseStatusAfter(h, b[HeaderSize:], prev) }); n != 0 {
		t.Errorf("%v allocations a STATUS, want 0", n)
	}
}

// A mirror appends its STATUS into a recycled buffer every interval: with
// lines too, that allocates nothing.
func TestAppendStatusLinesAllocs(t *testing.T) {
	st := linesStatus()
	buf := make([]byte, 0, HeaderSize+StatusLinesSize)
	if n := testing.AllocsPerRun(100, func() { buf = AppendStatus(buf[:0], st) }); n != 0 {
		t.Errorf("%v allocations a STATUS, want 0", n)
	}
}
