package wire

import (
	"fmt"

	"github.com/ringfire/ringfire/shm"
)

// Shape is what a DATA payload's records look like for one ring: the slot
// payload size and, for blob rings, the arena size bounding each blob.
type Shape struct {
	Payload int    // slot payload bytes per record (element_size − 8)
	Arena   uint64 // arena size; 0 for fixed rings
}

// ShapeOf returns the record shape of a geometry.
func ShapeOf(g Geometry) Shape {
	s := Shape{Payload: g.PayloadSize()}
	if g.Blob() {
		s.Arena = g.ArenaSize
	}
	return s
}

// Blob reports whether records carry blob bytes after the slot payload.
func (s Shape) Blob() bool { return s.Arena != 0 }

// blobLen is the length of the blob a blob record's slot payload describes.
func (s Shape) blobLen(slot []byte) uint32 { return shm.DecodeDescriptor(slot).Len }

// MaxRecord is the largest record this shape allows on the wire.
func (s Shape) MaxRecord() int {
	if s.Blob() {
		return s.Payload + int(min(s.Arena, 1<<30))
	}
	return s.Payload
}

// CheckData validates a DATA frame's payload strictly: count records, each
// exactly a slot payload (plus, for blob rings, exactly the blob bytes its
// descriptor announces, never more than the arena), nothing left over.
func (s Shape) CheckData(h Header, p []byte) error {
	if h.Count == 0 {
		return fmt.Errorf("%w: DATA with 0 records", ErrMalformed)
	}
	if h.Seq == 0 || h.Seq > ^uint64(0)-uint64(h.Count) {
		return fmt.Errorf("%w: DATA sequence %d", ErrMalformed, h.Seq)
	}
	if !s.Blob() {
		if len(p) != int(h.Count)*s.Payload {
			return fmt.Errorf("%w: DATA of %d records of %d bytes has %d bytes", ErrMalformed, h.Count, s.Payload, len(p))
		}
		return nil
	}
	off := 0
	for i := range int(h.Count) {
		if len(p)-off < s.Payload {
			return fmt.Errorf("%w: DATA record %d truncated", ErrMalformed, i)
		}
		n := uint64(s.blobLen(p[off : off+s.Payload]))
		off += s.Payload
		if n > s.Arena || n > uint64(len(p)-off) {
			return fmt.Errorf("%w: DATA record %d announces a %d-byte blob, %d bytes left", ErrMalformed, i, n, len(p)-off)
		}
		off += int(n)
	}
	if off != len(p) {
		return fmt.Errorf("%w: DATA has %d bytes after its %d records", ErrMalformed, len(p)-off, h.Count)
	}
	return nil
}

// Records iterates over the records of a DATA payload already checked by
// CheckData. It does not allocate.
type Records struct {
	shape Shape
	p     []byte
	off   int
	left  int // records still to yield
	seq   uint64
}

// NewRecords starts an iteration over the records of DATA frame h.
func (s Shape) NewRecords(h Header, p []byte) Records {
	return Records{shape: s, p: p, left: int(h.Count), seq: h.Seq}
}

// Next returns the next record's sequence, slot payload and blob bytes
// (nil for fixed rings); ok is false at the end.
func (r *Records) Next() (seq uint64, slot, blob []byte, ok bool) {
	if r.left <= 0 {
		return 0, nil, nil, false
	}
	r.left--
	slot = r.p[r.off : r.off+r.shape.Payload]
	r.off += r.shape.Payload
	if r.shape.Blob() {
		n := int(r.shape.blobLen(slot))
		blob = r.p[r.off : r.off+n]
		r.off += n
	}
	seq = r.seq
	r.seq++
	return seq, slot, blob, true
}
