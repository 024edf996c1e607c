package archive

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/ringfire/ringfire/shm"
)

// The bytes on disk (docs/archive.md is the reference). Every integer is
// little-endian. A segment is a header, then entries:
//
//	header (128 bytes)
//	  0  magic "RFARCHIV"
//	  8  version u32 (1)          12 header size u32 (128)
//	 16  epoch u64                24 first sequence u64
//	 32  created i64 (unix ns)    40 ring device u64     48 ring inode u64
//	 56  payload size u32         60 ring flags u32      64 capacity u64
//	 72  arena size u64           80 schema signature u64
//	 88  zero                    124 CRC-32C of bytes 0..123 u32
//
//	entry (32 bytes + payload)
//	  0  length u32: the bytes after this word and the next (24 + payload)
//	  4  CRC-32C u32 of those bytes
//	  8  kind u8 (1 record, 2 gap), then 7 zero bytes
//	 16  sequence u64 (a gap: its first missing sequence)
//	 24  time i64: unix ns the recorder saw it, never less than the last
//	 32  payload: a record's wire bytes (the slot payload, then, for a
//	     blob ring, the blob); a gap's last missing sequence (u64)
const (
	headerSize   = 128
	entryHead    = 32
	entryFixed   = entryHead - 8 // what length counts besides the payload
	version      = 1
	maxEntryBody = 1 << 31 // a record is at most a slot and a 1 GiB blob
)

var (
	magic    = [8]byte{'R', 'F', 'A', 'R', 'C', 'H', 'I', 'V'}
	castagno = crc32.MakeTable(crc32.Castagnoli)
	le       = binary.LittleEndian
)

// Kind is an entry's kind.
type Kind uint8

const (
	KindRecord Kind = 1 // a record of the ring
	KindGap    Kind = 2 // records the recorder could not read: Seq..Last
)

func (k Kind) String() string {
	switch k {
	case KindRecord:
		return "record"
	case KindGap:
		return "gap"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Geometry is what an archive keeps of a ring's layout: enough to make a
// ring that takes its records again (replay).
type Geometry struct {
	PayloadSize uint32    // slot payload bytes
	Flags       shm.Flags // the ring's flags (arena, lossless, ...)
	Capacity    uint64    // slots
	ArenaSize   uint64    // blob arena bytes; 0 for a fixed ring
	SchemaSig   uint64
}

// GeometryOf returns the geometry of a ring's layout.
func GeometryOf(l shm.Layout) Geometry {
	return Geometry{PayloadSize: uint32(l.PayloadSize()), Flags: l.Flags, Capacity: l.Capacity, ArenaSize: l.ArenaSize, SchemaSig: l.SchemaSig}
}

// Blob reports whether the ring's records carry blobs.
func (g Geometry) Blob() bool { return g.Flags&shm.FlagArena != 0 }

// maxBody is the largest entry body (length word) of this geometry: a
// record's slot payload and, for a blob ring, an arena's worth of blob.
func (g Geometry) maxBody() int {
	n := uint64(g.PayloadSize)
	if g.Blob() {
		n += min(g.ArenaSize, 1<<30)
	}
	return entryFixed + int(max(n, 8))
}

// RingConfig is the configuration of a ring that takes these records at
// their own sequence numbers: SPARSE, so that gaps are holes.
func (g Geometry) RingConfig() shm.RingConfig {
	return shm.RingConfig{PayloadSize: int(g.PayloadSize), Capacity: g.Capacity, ArenaSize: g.ArenaSize,
		SchemaSig: g.SchemaSig, Flags: g.Flags&shm.FlagArena | shm.FlagSparse}
}

// Source identifies the ring an epoch records: its geometry and its
// file (device and inode). Another file at the path (a producer that
// restarted) is another source, and starts another epoch.
type Source struct {
	Geometry
	Dev, Ino uint64
}

// Same reports whether s and o are the same ring.
func (s Source) Same(o Source) bool { return s == o }

// header is a segment's header.
type header struct {
	Epoch   uint64
	First   uint64 // the first sequence the segment holds
	Created int64
	Source  Source
}

func (h header) put(b []byte) {
	clear(b[:headerSize])
	copy(b, magic[:])
	le.PutUint32(b[8:], version)
	le.PutUint32(b[12:], headerSize)
	le.PutUint64(b[16:], h.Epoch)
	le.PutUint64(b[24:], h.First)
	le.PutUint64(b[32:], uint64(h.Created))
	le.PutUint64(b[40:], h.Source.Dev)
	le.PutUint64(b[48:], h.Source.Ino)
	g := h.Source.Geometry
	le.PutUint32(b[56:], g.PayloadSize)
	le.PutUint32(b[60:], uint32(g.Flags))
	le.PutUint64(b[64:], g.Capacity)
	le.PutUint64(b[72:], g.ArenaSize)
	le.PutUint64(b[80:], g.SchemaSig)
	le.PutUint32(b[124:], crc32.Checksum(b[:124], castagno))
}

// parseHeader decodes a segment header, checking everything it can.
func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize {
		return header{}, fmt.Errorf("%w: header of %d bytes", ErrCorrupt, len(b))
	}
	if [8]byte(b[:8]) != magic {
		return header{}, fmt.Errorf("%w: not an archive segment (magic %q)", ErrCorrupt, b[:8])
	}
	if v := le.Uint32(b[8:]); v != version {
		return header{}, fmt.Errorf("%w: segment version %d, this reads %d", ErrVersion, v, version)
	}
	if n := le.Uint32(b[12:]); n != headerSize {
		return header{}, fmt.Errorf("%w: header size %d", ErrCorrupt, n)
	}
	if got, want := crc32.Checksum(b[:124], castagno), le.Uint32(b[124:]); got != want {
		return header{}, fmt.Errorf("%w: header CRC %08x, want %08x", ErrCorrupt, got, want)
	}
	h := header{Epoch: le.Uint64(b[16:]), First: le.Uint64(b[24:]), Created: int64(le.Uint64(b[32:]))}
	h.Source = Source{Dev: le.Uint64(b[40:]), Ino: le.Uint64(b[48:]), Geometry: Geometry{
		PayloadSize: le.Uint32(b[56:]), Flags: shm.Flags(le.Uint32(b[60:])), Capacity: le.Uint64(b[64:]),
		ArenaSize: le.Uint64(b[72:]), SchemaSig: le.Uint64(b[80:])}}
	if h.First == 0 {
		return header{}, fmt.Errorf("%w: header with first sequence 0", ErrCorrupt)
	}
	if _, err := shm.NewLayout(h.Source.RingConfig()); err != nil {
		return header{}, fmt.Errorf("%w: header's ring geometry: %w", ErrCorrupt, err)
	}
	return h, nil
}

// Entry is one entry of an archive: a record, or a gap.
type Entry struct {
	Kind  Kind
	Epoch uint64
	Seq   uint64 // a record's sequence; a gap's first missing one
	Last  uint64 // a gap's last missing sequence; a record's Seq
	Time  int64  // unix ns the recorder saw it
	// Rec is a record's wire bytes: the slot payload, then a blob ring's
	// blob. It is valid until the next call on the cursor that made it.
	Rec []byte
}

// appendEntry appends an entry of kind k with payload p to b.
func appendEntry(b []byte, k Kind, seq uint64, t int64, p []byte) []byte {
	start := len(b)
	b = le.AppendUint32(b, uint32(entryFixed+len(p)))
	b = le.AppendUint32(b, 0) // the CRC, below
	b = append(b, byte(k), 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint64(b, seq)
	b = le.AppendUint64(b, uint64(t))
	b = append(b, p...)
	le.PutUint32(b[start+4:], crc32.Checksum(b[start+8:], castagno))
	return b
}

// entrySize is the bytes an entry with a payload of n bytes takes.
func entrySize(n int) int { return entryHead + n }

// bodyLen decodes the length word of an entry at the start of b (at least
// 8 bytes): the bytes after its first 8. ok is false for a length no
// writer makes.
func bodyLen(b []byte) (n int, ok bool) {
	l := le.Uint32(b)
	return int(l), l >= entryFixed && l <= maxEntryBody
}

// parseEntry decodes the entry that b holds exactly (its 8-byte prefix
// and its body), checking its CRC and its fields.
func parseEntry(b []byte, geo Geometry) (Entry, error) {
	if len(b) < entryHead {
		return Entry{}, fmt.Errorf("%w: entry of %d bytes", ErrCorrupt, len(b))
	}
	if n, ok := bodyLen(b); !ok || n != len(b)-8 {
		return Entry{}, fmt.Errorf("%w: entry length %d for %d bytes", ErrCorrupt, n, len(b)-8)
	}
	if got, want := crc32.Checksum(b[8:], castagno), le.Uint32(b[4:]); got != want {
		return Entry{}, fmt.Errorf("%w: entry CRC %08x, want %08x", ErrCorrupt, got, want)
	}
	e := Entry{Kind: Kind(b[8]), Seq: le.Uint64(b[16:]), Time: int64(le.Uint64(b[24:]))}
	p := b[entryHead:]
	if e.Seq == 0 {
		return Entry{}, fmt.Errorf("%w: entry of sequence 0", ErrCorrupt)
	}
	switch e.Kind {
	case KindRecord:
		if err := checkRecord(p, geo); err != nil {
			return Entry{}, err
		}
		e.Last, e.Rec = e.Seq, p
	case KindGap:
		if len(p) != 8 || le.Uint64(p) < e.Seq {
			return Entry{}, fmt.Errorf("%w: gap entry at %d", ErrCorrupt, e.Seq)
		}
		e.Last = le.Uint64(p)
	default:
		return Entry{}, fmt.Errorf("%w: entry kind %d", ErrCorrupt, b[8])
	}
	return e, nil
}

// checkRecord checks a record's bytes against the ring's geometry: one
// slot payload, and for a blob ring exactly the blob its descriptor
// announces.
func checkRecord(p []byte, g Geometry) error {
	n := int(g.PayloadSize)
	if !g.Blob() {
		if len(p) != n {
			return fmt.Errorf("%w: record of %d bytes, want %d", ErrCorrupt, len(p), n)
		}
		return nil
	}
	if len(p) < n || n < shm.DescriptorSize {
		return fmt.Errorf("%w: blob record of %d bytes", ErrCorrupt, len(p))
	}
	if d := shm.DecodeDescriptor(p[:n]); uint64(d.Len) != uint64(len(p)-n) || uint64(d.Len) > g.ArenaSize {
		return fmt.Errorf("%w: blob record announces %d bytes, holds %d", ErrCorrupt, d.Len, len(p)-n)
	}
	return nil
}
