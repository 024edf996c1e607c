package wire

// DATA payloads (data.go): what CheckData rejects for fixed and blob
// shapes, and the records NewRecords yields from what it accepts.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// ftBlobRecord appends a blob record: a slot payload of shape s whose
// descriptor announces n blob bytes (announce), then the blob bytes
// actually present (n).
func ftBlobRecord(b []byte, s Shape, seq uint64, announce uint32, n int) []byte {
	slot := make([]byte, s.Payload)
	binary.LittleEndian.PutUint64(slot, seq)
	shm.Descriptor{Offset: seq << 6, Len: announce}.Encode(slot)
	b = append(b, slot...)
	for i := range n {
		b = append(b, byte(seq)+byte(i))
	}
	return b
}

func TestCheckDataFixed(t *testing.T) {
	s := Shape{Payload: 56}
	h := func(count uint16, seq uint64) Header { return Header{Kind: KindData, Count: count, Seq: seq} }
	cases := []struct {
		why string
		h   Header
		n   int
	}{
		{"count 0", h(0, 1), 0},
		{"count 0 with bytes", h(0, 1), 56},
		{"one byte short", h(2, 1), 111},
		{"one byte long", h(2, 1), 113},
		{"truncated record", h(3, 1), 56 + 28},
		{"extra record", h(1, 1), 112},
		{"sequence 0", h(1, 0), 56},
		{"sequence wraps", h(2, ^uint64(0)-1), 112},
	}
	for _, c := range cases {
		if err := s.CheckData(c.h, make([]byte, c.n)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.why, err)
		}
	}
	p := make([]byte, 3*56)
	for i := range p {
		p[i] = byte(i)
	}
	hd := h(3, 40)
	if err := s.CheckData(hd, p); err != nil {
		t.Fatal(err)
	}
	it := s.NewRecords(hd, p)
	for i := range 3 {
		seq, slot, blob, ok := it.Next()
		if !ok || seq != 40+uint64(i) || blob != nil || !bytes.Equal(slot, p[i*56:(i+1)*56]) {
			t.Fatalf("record %d: %d % x %v %v", i, seq, slot[:4], blob, ok)
		}
	}
	if _, _, _, ok := it.Next(); ok {
		t.Fatal("a fourth record")
	}
}

func TestCheckDataBlob(t *testing.T) {
	s := ShapeOf(ftBlobGeometry())
	if !s.Blob() || s.Payload != 24 || s.Arena != 1<<16 {
		t.Fatalf("shape %+v", s)
	}
	small := Shape{Payload: 24, Arena: 64}
	h := func(count uint16) Header { return Header{Kind: KindData, Count: count, Seq: 7} }
	var two []byte
	two = ftBlobRecord(two, s, 7, 5, 5)
	two = ftBlobRecord(two, s, 8, 0, 0)
	cases := []struct {
		why string
		s   Shape
		h   Header
		p   []byte
	}{
		{"count 0", s, h(0), nil},
		{"count 0 with a record", s, h(0), ftBlobRecord(nil, s, 7, 0, 0)},
		{"truncated slot", s, h(1), ftBlobRecord(nil, s, 7, 0, 0)[:20]},
		{"missing record", s, h(3), two},
		{"blob past the end", s, h(1), ftBlobRecord(nil, s, 7, 10, 9)},
		{"blob length huge", s, h(1), ftBlobRecord(nil, s, 7, ^uint32(0), 3)},
		{"blob larger than the arena", small, h(1), ftBlobRecord(nil, small, 7, 65, 65)},
		{"trailing bytes", s, h(2), append(bytes.Clone(two), 0)},
		{"trailing record", s, h(1), two},
	}
	for _, c := range cases {
		if err := c.s.CheckData(c.h, c.p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.why, err)
		}
	}
	if err := small.CheckData(h(1), ftBlobRecord(nil, small, 7, 64, 64)); err != nil {
		t.Errorf("blob of the arena's size: %v", err)
	}
	if err := s.CheckData(h(2), two); err != nil {
		t.Fatal(err)
	}
	it := s.NewRecords(h(2), two)
	seq, slot, blob, ok := it.Next()
	if !ok || seq != 7 || len(slot) != 24 || !bytes.Equal(blob, []byte{7, 8, 9, 10, 11}) || shm.DecodeDescriptor(slot).Len != 5 {
		t.Fatalf("record 7: %v %d % x % x", ok, seq, slot, blob)
	}
	seq, slot, blob, ok = it.Next()
	if !ok || seq != 8 || len(slot) != 24 || len(blob) != 0 || binary.LittleEndian.Uint64(slot) != 8 {
		t.Fatalf("record 8: %v %d % x % x", ok, seq, slot, blob)
	}
	if _, _, _, ok := it.Next(); ok {
		t.Fatal("a third record")
	}
	if n := testing.AllocsPerRun(100, func() {
		it := s.NewRecords(h(2), two)
		for _, _, _, ok := it.Next(); ok; _, _, _, ok = it.Next() {
		}
	}); n != 0 {
		t.Errorf("Records allocates %v times", n)
	}
}

// A zero-size slot payload (element_size 8) is a valid geometry; its DATA
// frames carry count records of 0 bytes each.
func TestRecordsZeroPayload(t *testing.T) {
	g := Geometry{Capacity: 64, ElementSize: 8, SlotsOffset: 128}
	if err := g.Validate(); err != nil {
		t.Fatalf("element_size 8 (a 0-byte payload) must be a valid geometry: %v", err)
	}
	s := ShapeOf(g)
	h := Header{Kind: KindData, Count: 4, Seq: 10}
	if err := s.CheckData(h, nil); err != nil {
		t.Fatalf("CheckData: %v", err)
	}
	it := s.NewRecords(h, nil)
	n := 0
	for _, _, _, ok := it.Next(); ok && n < 10; _, _, _, ok = it.Next() {
		n++
	}
	if n != 4 {
		t.Errorf("Records yields %d records of a 4-record frame", n)
	}
}
