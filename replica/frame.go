package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/ringfire/ringfire/shm"
)

// Kind is a frame kind. Kinds are append-only: new kinds take the next free
// number and are only sent to peers that announced them in HELLO.
type Kind uint8

const (
	KindHello     Kind = 1 // mirror → source, TCP
	KindGeometry  Kind = 2 // source → mirror, TCP
	KindData      Kind = 3 // source → mirror, TCP or UDP
	KindGap       Kind = 4 // source → mirror, TCP
	KindHeartbeat Kind = 5 // source → mirror, TCP or UDP
	KindNak       Kind = 6 // mirror → source, TCP
	KindMulticast Kind = 7 // source → mirror, TCP
	KindPunch     Kind = 8 // mirror → source, UDP
	KindStatus    Kind = 9 // mirror → source, TCP, only after GeometryTelemetry
	kindLast           = KindStatus
)

var kindNames = [...]string{"", "HELLO", "GEOMETRY", "DATA", "GAP", "HEARTBEAT", "NAK", "MULTICAST", "PUNCH", "STATUS"}

func (k Kind) String() string {
	if k >= 1 && k <= kindLast {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Wire constants.
const (
	HeaderSize        = 16
	Magic      uint64 = 0x5249_4E47_4D49_5252 // "RINGMIRR"
	Version           = 1

	helloSize     = 16
	geometrySize  = 48
	multicastSize = 16
	nakSize       = 8

	// MaxNakRecords is the widest range one NAK may ask for.
	MaxNakRecords = 65535
	// DefaultMTU is the default datagram budget, header included
	// (1500 − 20 IPv4 − 8 UDP).
	DefaultMTU = 1472
	// MinMTU is the smallest datagram budget accepted.
	MinMTU = 256
	// MaxMTU is the largest datagram budget (jumbo frames: 9000 − 28).
	MaxMTU = 8972
)

// HELLO flags.
const (
	HelloUDP     uint8 = 1 << 0 // the mirror can receive UDP datagrams
	HelloUnicast uint8 = 1 << 1 // the mirror prefers UDP unicast
	// HelloTelemetry: the mirror can report STATUS frames (an extension;
	// the source acknowledges it with GeometryTelemetry).
	HelloTelemetry uint8 = 1 << 2
)

// GEOMETRY flags.
const (
	GeometryReset     uint8 = 1 << 0 // the mirror must start a fresh ring
	GeometryMulticast uint8 = 1 << 1 // a MULTICAST frame follows
	// GeometryTelemetry: the source takes STATUS frames (set only for a
	// mirror that announced HelloTelemetry).
	GeometryTelemetry uint8 = 1 << 2
)

// HELLO start sequences.
const (
	StartNewest uint64 = 0          // only records published from now on
	StartOldest uint64 = ^uint64(0) // everything the source still retains
)

// Errors of the frame codec.
var (
	ErrMalformed = errors.New("replica: malformed frame")
	ErrMagic     = errors.New("replica: bad magic")
	ErrVersion   = errors.New("replica: unsupported protocol version")
	ErrTooLarge  = errors.New("replica: frame too large")
)

// Header is the 16-byte header of every frame:
// kind u8 @0 | flags u8 @1 | count u16 @2 | len u32 @4 | seq u64 @8.
type Header struct {
	Kind  Kind
	Flags uint8
	Count uint16
	Len   uint32
	Seq   uint64
}

// Put encodes h into b[:HeaderSize].
func (h Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	b[0] = byte(h.Kind)
	b[1] = h.Flags
	binary.LittleEndian.PutUint16(b[2:], h.Count)
	binary.LittleEndian.PutUint32(b[4:], h.Len)
	binary.LittleEndian.PutUint64(b[8:], h.Seq)
}

// ParseHeader decodes a frame header and checks its kind and that its
// payload length is at most maxLen.
func ParseHeader(b []byte, maxLen int) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, a header needs %d", ErrMalformed, len(b), HeaderSize)
	}
	h := Header{Kind: Kind(b[0]), Flags: b[1], Count: binary.LittleEndian.Uint16(b[2:]),
		Len: binary.LittleEndian.Uint32(b[4:]), Seq: binary.LittleEndian.Uint64(b[8:])}
	if h.Kind < KindHello || h.Kind > kindLast {
		return h, fmt.Errorf("%w: unknown kind %d", ErrMalformed, b[0])
	}
	if uint64(h.Len) > uint64(maxLen) {
		return h, fmt.Errorf("%w: %v of %d bytes, limit %d", ErrTooLarge, h.Kind, h.Len, maxLen)
	}
	if want, fixed := fixedLen(h.Kind); fixed && int(h.Len) != want {
		return h, fmt.Errorf("%w: %v payload of %d bytes, want %d", ErrMalformed, h.Kind, h.Len, want)
	}
	return h, nil
}

// fixedLen is the payload length of kinds whose payload has a fixed size.
func fixedLen(k Kind) (int, bool) {
	switch k {
	case KindHello:
		return helloSize, true
	case KindGeometry:
		return geometrySize, true
	case KindMulticast:
		return multicastSize, true
	case KindNak:
		return nakSize, true
	case KindStatus:
		return statusSize, true
	case KindGap, KindHeartbeat, KindPunch:
		return 0, true
	}
	return 0, false
}

// Hello is the HELLO payload.
type Hello struct {
	Flags uint8
}

// AppendHello appends a HELLO frame asking to start at start.
func AppendHello(b []byte, start uint64, h Hello) []byte {
	b = appendHeader(b, Header{Kind: KindHello, Len: helloSize, Seq: start})
	b = binary.LittleEndian.AppendUint64(b, Magic)
	b = binary.LittleEndian.AppendUint32(b, Version)
	return append(b, h.Flags, 0, 0, 0)
}

// ParseHello decodes a HELLO payload, checking magic and version.
func ParseHello(p []byte) (Hello, error) {
	if len(p) != helloSize {
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
	b = appendHeader(b, Header{Kind: KindGeometry, Flags: flags, Len: geometrySize, Seq: first})
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

// ParseGeometry decodes and sanity-checks a GEOMETRY payload.
func ParseGeometry(p []byte) (Geometry, error) {
	if len(p) != geometrySize {
		return Geometry{}, fmt.Errorf("%w: GEOMETRY of %d bytes", ErrMalformed, len(p))
	}
	le := binary.LittleEndian
	g := Geometry{Capacity: le.Uint64(p), ElementSize: le.Uint32(p[8:]), RingFlags: le.Uint32(p[12:]),
		SchemaSig: le.Uint64(p[16:]), RegistryCount: le.Uint32(p[24:]), SlotsOffset: le.Uint32(p[28:]),
		ArenaOffset: le.Uint64(p[32:]), ArenaSize: le.Uint64(p[40:])}
	return g, g.Validate()
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
}

// Unicast reports whether the datagrams come by unicast.
func (m Multicast) Unicast() bool { return m.Group == [4]byte{} }

// AppendMulticast appends a MULTICAST frame.
func AppendMulticast(b []byte, m Multicast) []byte {
	b = appendHeader(b, Header{Kind: KindMulticast, Len: multicastSize})
	b = append(b, m.Group[:]...)
	b = binary.LittleEndian.AppendUint16(b, m.Port)
	b = binary.LittleEndian.AppendUint16(b, m.MTU)
	b = append(b, m.TTL, m.Session)
	b = binary.LittleEndian.AppendUint32(b, m.Token)
	return append(b, 0, 0)
}

// ParseMulticast decodes a MULTICAST payload.
func ParseMulticast(p []byte) (Multicast, error) {
	if len(p) != multicastSize {
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

// AppendNak appends a NAK asking for records first..last (inclusive).
func AppendNak(b []byte, first, last uint64) []byte {
	b = appendHeader(b, Header{Kind: KindNak, Len: nakSize, Seq: first})
	return binary.LittleEndian.AppendUint64(b, last)
}

// ParseNak decodes a NAK and checks its range: first ≥ 1, last ≥ first, at
// most MaxNakRecords records.
func ParseNak(h Header, p []byte) (first, last uint64, err error) {
	if len(p) != nakSize {
		return 0, 0, fmt.Errorf("%w: NAK of %d bytes", ErrMalformed, len(p))
	}
	first, last = h.Seq, binary.LittleEndian.Uint64(p)
	if first == 0 || last < first || last-first >= MaxNakRecords {
		return first, last, fmt.Errorf("%w: NAK range %d..%d (at most %d records from 1)", ErrMalformed, first, last, MaxNakRecords)
	}
	return first, last, nil
}

// AppendEmpty appends a payload-less frame: GAP, HEARTBEAT or PUNCH.
func AppendEmpty(b []byte, k Kind, flags uint8, seq uint64) []byte {
	return appendHeader(b, Header{Kind: k, Flags: flags, Seq: seq})
}

func appendHeader(b []byte, h Header) []byte {
	var hdr [HeaderSize]byte
	h.Put(hdr[:])
	return append(b, hdr[:]...)
}
