package wire

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/ringfire/ringfire/shm"
)

// Hello is the HELLO payload.
type Hello struct {
	Flags uint8
}

// AppendHello appends a HELLO frame asking to start at start.
func AppendHello(b []byte, start uint64, h Hello) []byte {
	b = appendHeader(b, Header{Kind: KindHello, Len: HelloSize, Seq: start})
	b = binary.LittleEndian.AppendUint64(b, Magic)
	b = binary.LittleEndian.AppendUint32(b, Version)
	return append(b, h.Flags, 0, 0, 0)
}

// ParseHello decodes a HELLO payload, checking magic and version.
func ParseHello(p []byte) (Hello, error) {
	if len(p) != HelloSize {
		return Hello{}, fmt.Errorf("%w: HELLO of %d bytes", ErrMalformed, len(p))
	}
	if m := binary.LittleEndian.Uint64(p); m != Magic {
		return Hello{}, fmt.Errorf("%w: HELLO magic %#x, want %#x", ErrMagic, m, Magic)
	}
	if v := binary.LittleEndian.Uint32(p[8:]); v != Version {
		return Hello{}, fmt.Errorf("%w: HELLO version %d, this source speaks %d", ErrVersion, v, Version)
	}
	return Hello{Flags: p[12]}, nil
}

// Geometry is the GEOMETRY payload: the source ring's layout.
type Geometry struct {
	Capacity      uint64
	ElementSize   uint32
	RingFlags     uint32
	SchemaSig     uint64
	RegistryCount uint32
	SlotsOffset   uint32
	ArenaOffset   uint64
	ArenaSize     uint64
}

// GeometryOf describes a ring layout.
func GeometryOf(l shm.Layout) Geometry {
	return Geometry{Capacity: l.Capacity, ElementSize: l.ElementSize, RingFlags: uint32(l.Flags),
		SchemaSig: l.SchemaSig, RegistryCount: l.RegistryCount, SlotsOffset: uint32(l.SlotsOffset),
		ArenaOffset: l.ArenaOffset, ArenaSize: l.ArenaSize}
}

// AppendGeometry appends a GEOMETRY frame; first is the first sequence
// that will be sent.
func AppendGeometry(b []byte, first uint64, flags uint8, g Geometry) []byte {
	b = appendHeader(b, Header{Kind: KindGeometry, Flags: flags, Len: GeometrySize, Seq: first})
	le := binary.LittleEndian
	b = le.AppendUint64(b, g.Capacity)
	b = le.AppendUint32(b, g.ElementSize)
	b = le.AppendUint32(b, g.RingFlags)
	b = le.AppendUint64(b, g.SchemaSig)
	b = le.AppendUint32(b, g.RegistryCount)
	b = le.AppendUint32(b, g.SlotsOffset)
	b = le.AppendUint64(b, g.ArenaOffset)
	return le.AppendUint64(b, g.ArenaSize)
}

// ParseGeometry decodes a GEOMETRY payload and checks it: the wire
// spec's sanity rules (Validate), then that it describes the canonical
// layout of its fields (Canonical).
func ParseGeometry(p []byte) (Geometry, error) {
	if len(p) != GeometrySize {
		return Geometry{}, fmt.Errorf("%w: GEOMETRY of %d bytes", ErrMalformed, len(p))
	}
	le := binary.LittleEndian
	g := Geometry{Capacity: le.Uint64(p), ElementSize: le.Uint32(p[8:]), RingFlags: le.Uint32(p[12:]),
		SchemaSig: le.Uint64(p[16:]), RegistryCount: le.Uint32(p[24:]), SlotsOffset: le.Uint32(p[28:]),
		ArenaOffset: le.Uint64(p[32:]), ArenaSize: le.Uint64(p[40:])}
	if err := g.Validate(); err != nil {
		return g, err
	}
	return g, g.Canonical()
}

// Blob reports whether the ring carries a blob arena.
func (g Geometry) Blob() bool { return shm.Flags(g.RingFlags)&shm.FlagArena != 0 }

// Validate applies the GEOMETRY sanity rules of the wire spec.
func (g Geometry) Validate() error {
	bad := func(f string, v uint64, why string) error {
		return fmt.Errorf("%w: GEOMETRY %s = %d: %s", ErrMalformed, f, v, why)
	}
	switch {
	case g.Capacity == 0 || g.Capacity&(g.Capacity-1) != 0 || g.Capacity > 1<<40:
		return bad("capacity", g.Capacity, "not a power of two up to 2^40")
	case g.ElementSize < 8 || g.ElementSize%8 != 0 || g.ElementSize > 1<<24:
		return bad("element_size", uint64(g.ElementSize), "not a multiple of 8 in 8..2^24")
	case g.RegistryCount > 4096:
		return bad("registry_count", uint64(g.RegistryCount), "more than 4096")
	case uint64(g.SlotsOffset) < 128+64*uint64(g.RegistryCount) || g.SlotsOffset%64 != 0:
		return bad("slots_offset", uint64(g.SlotsOffset), "before the registry's end or not 64-aligned")
	}
	if !g.Blob() {
		return nil
	}
	hi, end := bits.Mul64(g.Capacity, uint64(g.ElementSize))
	switch {
	case g.ArenaSize < 64 || g.ArenaSize&(g.ArenaSize-1) != 0 || g.ArenaSize > 1<<44:
		return bad("arena_size", g.ArenaSize, "not a power of two in 64..2^44")
	case hi != 0 || g.ArenaOffset < uint64(g.SlotsOffset)+end || g.ArenaOffset%64 != 0:
		return bad("arena_offset", g.ArenaOffset, "before the slots' end or not 64-aligned")
	case g.ElementSize < 8+shm.DescriptorSize:
		return bad("element_size", uint64(g.ElementSize), "too small for a blob descriptor")
	}
	return nil
}

// Canonical checks that every offset is the one shm's layout places
// (shm.NewLayout) for the other fields: the slots right after the header
// and registry, the arena right after the slots, no arena fields without
// the arena flag. The offsets are the only fields that make a mirror ring
// larger than its slots, registry and arena: a source that could set them
// freely would make a mirror reserve any size for a ring of a few slots.
// A failure names the field and the offset the layout wants. Validate's
// rules are assumed to hold (ParseGeometry checks them first).
func (g Geometry) Canonical() error {
	bad := func(f string, v, want uint64) error {
		return fmt.Errorf("%w: GEOMETRY %s = %d: the layout of these fields puts it at %d", ErrMalformed, f, v, want)
	}
	c := shm.RingConfig{PayloadSize: g.PayloadSize(), Capacity: g.Capacity,
		Readers: int(g.RegistryCount), SchemaSig: g.SchemaSig}
	if g.Blob() {
		c.ArenaSize = g.ArenaSize
	} else if g.ArenaOffset != 0 || g.ArenaSize != 0 {
		return bad("arena_offset", g.ArenaOffset, 0) // no WITH_ARENA: no arena
	}
	l, err := shm.NewLayout(c)
	if err != nil {
		return fmt.Errorf("%w: GEOMETRY describes no ring this layout makes: %v", ErrMalformed, err)
	}
	switch {
	case uint64(g.SlotsOffset) != l.SlotsOffset:
		return bad("slots_offset", uint64(g.SlotsOffset), l.SlotsOffset)
	case g.ArenaOffset != l.ArenaOffset:
		return bad("arena_offset", g.ArenaOffset, l.ArenaOffset)
	}
	return nil
}

// PayloadSize is the slot payload size (element_size − 8).
func (g Geometry) PayloadSize() int { return int(g.ElementSize) - 8 }

// MirrorLayout is the layout of a mirror ring for this geometry: the
// source's offsets, registry size and schema, with SPMC | LATEST_WINS |
// SPARSE flags (and the arena if any).
func (g Geometry) MirrorLayout() (shm.Layout, error) {
	flags := shm.FlagSPMC | shm.FlagLatestWins | shm.FlagSparse
	if g.RegistryCount > 0 {
		flags |= shm.FlagRegistry
	}
	l := shm.Layout{ElementSize: g.ElementSize, Capacity: g.Capacity, SchemaSig: g.SchemaSig,
		RegistryCount: g.RegistryCount, SlotsOffset: uint64(g.SlotsOffset)}
	if g.Blob() {
		flags |= shm.FlagArena
		l.ArenaOffset, l.ArenaSize = g.ArenaOffset, g.ArenaSize
	}
	l.Flags = flags
	if err := l.Validate(); err != nil {
		return l, fmt.Errorf("%w: GEOMETRY describes no valid ring: %v", ErrMalformed, err)
	}
	return l, nil
}

// Multicast is the MULTICAST payload: where DATA datagrams come from.
type Multicast struct {
	Group   [4]byte // 0.0.0.0 = unicast (the mirror punches to Port)
	Port    uint16
	MTU     uint16
	TTL     uint8
	Session uint8
	Token   uint32
	// Key is a unicast line B's punch key (GeometryLines after a unicast
	// line A): 64 random bits the mirror's line B PUNCH carries. It
	// travels in the MULTICAST header's seq, 0 in every other MULTICAST.
	Key uint64
}

// Unicast reports whether the datagrams come by unicast.
func (m Multicast) Unicast() bool { return m.Group == [4]byte{} }

// AppendMulticast appends a MULTICAST frame.
func AppendMulticast(b []byte, m Multicast) []byte {
	b = appendHeader(b, Header{Kind: KindMulticast, Len: MulticastSize, Seq: m.Key})
	b = append(b, m.Group[:]...)
	b = binary.LittleEndian.AppendUint16(b, m.Port)
	b = binary.LittleEndian.AppendUint16(b, m.MTU)
	b = append(b, m.TTL, m.Session)
	b = binary.LittleEndian.AppendUint32(b, m.Token)
	return append(b, 0, 0)
}

// ParseMulticast decodes a MULTICAST payload.
func ParseMulticast(p []byte) (Multicast, error) {
	if len(p) != MulticastSize {
		return Multicast{}, fmt.Errorf("%w: MULTICAST of %d bytes", ErrMalformed, len(p))
	}
	m := Multicast{Port: binary.LittleEndian.Uint16(p[4:]), MTU: binary.LittleEndian.Uint16(p[6:]),
		TTL: p[8], Session: p[9], Token: binary.LittleEndian.Uint32(p[10:])}
	copy(m.Group[:], p[:4])
	if m.Port == 0 {
		return m, fmt.Errorf("%w: MULTICAST port 0", ErrMalformed)
	}
	if m.MTU < MinMTU || m.MTU > MaxMTU {
		return m, fmt.Errorf("%w: MULTICAST mtu %d outside %d..%d", ErrMalformed, m.MTU, MinMTU, MaxMTU)
	}
	if !m.Unicast() && (m.Group[0]&0xF0) != 0xE0 {
		return m, fmt.Errorf("%w: MULTICAST group %d.%d.%d.%d is not a multicast address", ErrMalformed, m.Group[0], m.Group[1], m.Group[2], m.Group[3])
	}
	return m, nil
}

// ParseLineB decodes line B's MULTICAST frame (h its header, p its
// payload): a group, as ParseMulticast; or, unicast, where line B's
// datagrams leave from (Token: the source's line B address, big-endian;
// Port: its UDP port) and the punch key (Key, the header's seq), both
// required. A group's frame carries no key.
func ParseLineB(h Header, p []byte) (Multicast, error) {
	m, err := ParseMulticast(p)
	if err != nil {
		return m, err
	}
	m.Key = h.Seq
	switch {
	case m.Unicast() && (m.Key == 0 || m.Token == 0):
		return m, fmt.Errorf("%w: a unicast line B's MULTICAST without its source address or punch key", ErrMalformed)
	case !m.Unicast() && m.Key != 0:
		return m, fmt.Errorf("%w: a group line B's MULTICAST with a punch key", ErrMalformed)
	}
	return m, nil
}

// PunchLineB is the header count of a PUNCH on a unicast line B (0: line A).
const PunchLineB uint16 = 1

// AppendLinePunch appends a unicast line B's PUNCH: the session in the
// flags, PunchLineB in the count, the punch key (Multicast.Key) in the seq.
func AppendLinePunch(b []byte, session uint8, key uint64) []byte {
	return appendHeader(b, Header{Kind: KindPunch, Flags: session, Count: PunchLineB, Seq: key})
}

// ParseLinePunch decodes a line B PUNCH (its header, HeaderSize bytes):
// the session and the punch key, which may not be 0.
func ParseLinePunch(b []byte) (session uint8, key uint64, err error) {
	if len(b) != HeaderSize {
		return 0, 0, fmt.Errorf("%w: line B PUNCH of %d bytes", ErrMalformed, len(b))
	}
	h, err := ParseHeader(b, 0)
	switch {
	case err != nil:
		return 0, 0, err
	case h.Kind != KindPunch || h.Count != PunchLineB || h.Seq == 0:
		return 0, 0, fmt.Errorf("%w: not a line B PUNCH (%v, count %d, key 0: %v)", ErrMalformed, h.Kind, h.Count, h.Seq == 0)
	}
	return h.Flags, h.Seq, nil
}
