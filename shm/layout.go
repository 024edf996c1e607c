package shm

import (
	"encoding/binary"
	"math/bits"
)

// Layout constants of ring protocol v2 (see doc.go and compat.md §1).
const (
	Magic   uint64 = 0x5249_4E47_4649_5245 // "RINGFIRE"
	Version uint32 = 2

	HeaderSize       = 128 // ring header bytes
	RegistryOffset   = 128 // reader registry, when present
	RegistryEntry    = 64  // bytes per registered reader
	DefaultReaders   = 32  // registry slots of a lossless ring by default
	ArenaHeaderSize  = 64  // blob arena header before its data
	BlobAlign        = 64  // arena reservations are multiples of this
	DescriptorSize   = 16  // blob descriptor at the end of a blob ring's slot payload
	SlotWriting      = ^uint64(0)
	maxElementSize   = 1 << 24
	maxCapacity      = 1 << 40
	maxRegistryCount = 4096
)

// Header field offsets.
const (
	offMagic         = 0
	offVersion       = 8
	offElementSize   = 12
	offCapacity      = 16
	offMask          = 24
	offWriteSeq      = 32
	offClaimSeq      = 40
	offFlags         = 48
	offFutex         = 52
	offWaiting       = 56
	offReadSeq       = 64
	offSchemaSig     = 72
	offArenaOffset   = 80
	offArenaSize     = 88
	offRegistryOff   = 96
	offRegistryCount = 100
	offSlotsOffset   = 104
)

// Reader registry entry field offsets.
const (
	regPID       = 0
	regActive    = 4
	regCursor    = 8
	regHeartbeat = 16
	regName      = 24
	regNameLen   = 32
)

// Arena header field offsets, relative to arena_offset.
const (
	arenaCapacity = 0
	arenaMask     = 8
	arenaReserved = 16
)

// Flags of the ring header.
type Flags uint32

const (
	FlagLatestWins Flags = 0x1   // writer never blocks; slow readers are lapped
	FlagLossless   Flags = 0x2   // LOSSLESS_BACKPRESSURE: writer waits for registered readers
	FlagSPMC       Flags = 0x10  // one producer, many consumers
	FlagMPMC       Flags = 0x20  // many producers (claim_seq), many consumers
	FlagArena      Flags = 0x100 // WITH_ARENA: a blob arena follows the slots
	FlagRegistry   Flags = 0x200 // WITH_REGISTRY: reader registry at offset 128
	FlagSparse     Flags = 0x400 // SPARSE: sequences may have holes (mirror rings)

	knownFlags = FlagLatestWins | FlagLossless | FlagSPMC | FlagMPMC | FlagArena | FlagRegistry | FlagSparse
)

// Layout is the geometry of a ring: everything in the header that does not
// change after creation. It is a pure value; Ring is the live mapping.
type Layout struct {
	ElementSize   uint32 // slot stride: 8-byte slot sequence + payload
	Capacity      uint64 // slots, a power of two
	Flags         Flags
	SchemaSig     uint64 // 0 = unverified
	RegistryCount uint32 // reader registry entries (0 = none)
	SlotsOffset   uint64
	ArenaOffset   uint64 // 0 = no arena
	ArenaSize     uint64 // arena data bytes, a power of two
}

// Header is a decoded ring header: the layout plus the live counters as they
// were when it was read.
type Header struct {
	Layout
	Magic            uint64
	Version          uint32
	Mask             uint64
	WriteSeq         uint64
	ClaimSeq         uint64
	FutexWord        uint32
	WaitingConsumers uint32
	ReadSeq          uint64
}

// RingConfig describes a ring to create.
type RingConfig struct {
	PayloadSize int    // bytes of payload per slot (the record size)
	Capacity    uint64 // slots, a power of two
	Flags       Flags  // FlagLossless, FlagSparse...; SPMC and LATEST_WINS are implied unless lossless
	Readers     int    // registry entries; DefaultReaders for lossless rings when 0
	ArenaSize   uint64 // blob arena bytes (a power of two), 0 for none
	SchemaSig   uint64
}

func roundUp(v, to uint64) uint64 { return (v + to - 1) &^ (to - 1) }

func isPow2(v uint64) bool { return v != 0 && v&(v-1) == 0 }

// NewLayout computes the layout of a ring from its configuration, placing
// the registry, slots and arena as ringfire v2 does.
func NewLayout(c RingConfig) (Layout, error) {
	if c.PayloadSize <= 0 || c.PayloadSize > maxElementSize-8 {
		return Layout{}, fieldErr(ErrInvalid, "payload size", uint64(c.PayloadSize), "must be 1..%d", maxElementSize-8)
	}
	if !isPow2(c.Capacity) || c.Capacity > maxCapacity {
		return Layout{}, fieldErr(ErrInvalid, "capacity", c.Capacity, "must be a power of two up to 2^40")
	}
	if c.Flags&^knownFlags != 0 {
		return Layout{}, fieldErr(ErrInvalid, "flags", uint64(c.Flags), "unknown bits")
	}
	if c.Flags&FlagMPMC != 0 && (c.Flags&(FlagLossless|FlagSPMC|FlagSparse) != 0 || c.ArenaSize != 0) {
		return Layout{}, fieldErr(ErrInvalid, "flags", uint64(c.Flags), "a multi-producer ring is lossy, fixed-size and not sparse")
	}
	l := Layout{Capacity: c.Capacity, SchemaSig: c.SchemaSig, Flags: c.Flags &^ (FlagArena | FlagRegistry)}
	if l.Flags&(FlagSPMC|FlagMPMC) == 0 {
		l.Flags |= FlagSPMC
	}
	if l.Flags&FlagLossless == 0 {
		l.Flags |= FlagLatestWins
	}
	readers := c.Readers
	if readers == 0 && l.Flags&FlagLossless != 0 {
		readers = DefaultReaders
	}
	if readers < 0 || readers > maxRegistryCount {
		return Layout{}, fieldErr(ErrInvalid, "readers", uint64(readers), "must be 0..%d", maxRegistryCount)
	}
	if readers > 0 {
		l.Flags |= FlagRegistry
		l.RegistryCount = uint32(readers)
	}
	l.ElementSize = uint32(roundUp(8+uint64(c.PayloadSize), 8))
	align := uint64(64)
	if c.ArenaSize != 0 {
		if !isPow2(c.ArenaSize) || c.ArenaSize < BlobAlign || c.ArenaSize > 1<<44 {
			return Layout{}, fieldErr(ErrInvalid, "arena size", c.ArenaSize, "must be a power of two, 64 B to 16 TiB")
		}
		align = 128
		l.Flags |= FlagArena
		l.ArenaSize = c.ArenaSize
	}
	l.SlotsOffset = HeaderSize
	if readers > 0 {
		l.SlotsOffset = roundUp(RegistryOffset+RegistryEntry*uint64(readers), align)
	} else if align == 128 {
		l.SlotsOffset = roundUp(HeaderSize, align)
	}
	if c.ArenaSize != 0 {
		l.ArenaOffset = roundUp(l.slotsEnd(), 128)
	}
	return l, l.Validate()
}

// PayloadSize is the number of payload bytes per slot (stride − 8).
func (l Layout) PayloadSize() int { return int(l.ElementSize) - 8 }

func (l Layout) slotsEnd() uint64 { return l.SlotsOffset + l.Capacity*uint64(l.ElementSize) }

// FileSize is the smallest file holding every region of the layout.
func (l Layout) FileSize() uint64 {
	if l.Flags&FlagArena != 0 {
		return l.ArenaOffset + ArenaHeaderSize + l.ArenaSize
	}
	return l.slotsEnd()
}

// Validate checks the layout's internal consistency; each failure names the
// field. It never looks at a file; ParseHeader adds the size checks.
func (l Layout) Validate() error {
	if l.ElementSize < 8 || l.ElementSize%8 != 0 || l.ElementSize > maxElementSize {
		return fieldErr(ErrCorrupt, "element_size", uint64(l.ElementSize), "must be a multiple of 8 in 8..%d", maxElementSize)
	}
	if !isPow2(l.Capacity) || l.Capacity > maxCapacity {
		return fieldErr(ErrCorrupt, "capacity", l.Capacity, "must be a power of two up to 2^40")
	}
	if l.Flags&^knownFlags != 0 {
		return fieldErr(ErrCorrupt, "flags", uint64(l.Flags), "unknown bits %#x", uint32(l.Flags&^knownFlags))
	}
	if l.Flags&FlagRegistry != 0 {
		if l.RegistryCount == 0 || l.RegistryCount > maxRegistryCount {
			return fieldErr(ErrCorrupt, "reader_registry_count", uint64(l.RegistryCount), "must be 1..%d with WITH_REGISTRY", maxRegistryCount)
		}
	} else if l.RegistryCount != 0 {
		return fieldErr(ErrCorrupt, "reader_registry_count", uint64(l.RegistryCount), "set without the WITH_REGISTRY flag")
	}
	if l.SlotsOffset < RegistryOffset+RegistryEntry*uint64(l.RegistryCount) || l.SlotsOffset%64 != 0 || l.SlotsOffset > 1<<32 {
		return fieldErr(ErrCorrupt, "slots_offset", l.SlotsOffset, "must be 64-aligned and after the header and registry")
	}
	if l.Flags&FlagArena == 0 {
		if l.ArenaOffset != 0 || l.ArenaSize != 0 {
			return fieldErr(ErrCorrupt, "arena_offset", l.ArenaOffset, "arena set without the WITH_ARENA flag")
		}
		return nil
	}
	if !isPow2(l.ArenaSize) || l.ArenaSize < BlobAlign || l.ArenaSize > 1<<44 {
		return fieldErr(ErrCorrupt, "arena_size", l.ArenaSize, "must be a power of two, 64 B to 16 TiB")
	}
	if l.ArenaOffset < l.slotsEnd() || l.ArenaOffset%64 != 0 {
		return fieldErr(ErrCorrupt, "arena_offset", l.ArenaOffset, "must be 64-aligned and after the slots (end %d)", l.slotsEnd())
	}
	if l.ElementSize < 8+DescriptorSize {
		return fieldErr(ErrCorrupt, "element_size", uint64(l.ElementSize), "too small for a blob descriptor")
	}
	return nil
}

// ParseHeader decodes and validates a ring header read from a file of
// fileSize bytes. b must hold at least HeaderSize bytes. Magic, version,
// every geometry field and every region are checked; the first failure is
// returned as a *FieldError naming the field.
func ParseHeader(b []byte, fileSize uint64) (Header, error) {
	if len(b) < HeaderSize || fileSize < HeaderSize {
		return Header{}, fieldErr(ErrTruncated, "file size", fileSize, "shorter than the %d-byte header", HeaderSize)
	}
	le := binary.LittleEndian
	h := Header{
		Magic:            le.Uint64(b[offMagic:]),
		Version:          le.Uint32(b[offVersion:]),
		Mask:             le.Uint64(b[offMask:]),
		WriteSeq:         le.Uint64(b[offWriteSeq:]),
		ClaimSeq:         le.Uint64(b[offClaimSeq:]),
		FutexWord:        le.Uint32(b[offFutex:]),
		WaitingConsumers: le.Uint32(b[offWaiting:]),
		ReadSeq:          le.Uint64(b[offReadSeq:]),
		Layout: Layout{
			ElementSize:   le.Uint32(b[offElementSize:]),
			Capacity:      le.Uint64(b[offCapacity:]),
			Flags:         Flags(le.Uint32(b[offFlags:])),
			SchemaSig:     le.Uint64(b[offSchemaSig:]),
			ArenaOffset:   le.Uint64(b[offArenaOffset:]),
			ArenaSize:     le.Uint64(b[offArenaSize:]),
			RegistryCount: le.Uint32(b[offRegistryCount:]),
			SlotsOffset:   le.Uint64(b[offSlotsOffset:]),
		},
	}
	if h.Magic != Magic {
		return h, fieldErr(ErrMagic, "magic", h.Magic, "want %#x (\"RINGFIRE\"); 0 means the creator has not finished", Magic)
	}
	if h.Version != Version {
		return h, fieldErr(ErrVersion, "version", uint64(h.Version), "this reader speaks layout version %d", Version)
	}
	regOff := uint64(le.Uint32(b[offRegistryOff:]))
	if err := h.Layout.Validate(); err != nil {
		return h, err
	}
	if h.Mask != h.Capacity-1 {
		return h, fieldErr(ErrCorrupt, "mask", h.Mask, "want capacity-1 = %d", h.Capacity-1)
	}
	if h.Flags&FlagRegistry != 0 && regOff != RegistryOffset {
		return h, fieldErr(ErrCorrupt, "reader_registry_offset", regOff, "want %d", RegistryOffset)
	}
	if h.Flags&FlagRegistry == 0 && regOff != 0 && regOff != RegistryOffset {
		return h, fieldErr(ErrCorrupt, "reader_registry_offset", regOff, "want 0 or %d", RegistryOffset)
	}
	if overflow, end := bits.Mul64(h.Capacity, uint64(h.ElementSize)); overflow != 0 || end > fileSize || h.SlotsOffset > fileSize-end {
		return h, fieldErr(ErrTruncated, "slots", h.SlotsOffset, "%d slots of %d bytes do not fit the %d-byte file", h.Capacity, h.ElementSize, fileSize)
	}
	if h.Flags&FlagArena != 0 && h.ArenaOffset > fileSize {
		return h, fieldErr(ErrTruncated, "arena_offset", h.ArenaOffset, "beyond the end of the %d-byte file", fileSize)
	}
	if h.Flags&FlagArena != 0 && fileSize-h.ArenaOffset < ArenaHeaderSize+h.ArenaSize {
		return h, fieldErr(ErrTruncated, "arena_size", h.ArenaSize, "arena at %d does not fit the %d-byte file", h.ArenaOffset, fileSize)
	}
	return h, nil
}

// Encode writes the header fields of l into b (HeaderSize bytes) with the
// magic left 0: the creator stores the magic last, atomically.
func (l Layout) encode(b []byte) {
	le := binary.LittleEndian
	clear(b[:HeaderSize])
	le.PutUint32(b[offVersion:], Version)
	le.PutUint32(b[offElementSize:], l.ElementSize)
	le.PutUint64(b[offCapacity:], l.Capacity)
	le.PutUint64(b[offMask:], l.Capacity-1)
	le.PutUint32(b[offFlags:], uint32(l.Flags))
	le.PutUint64(b[offSchemaSig:], l.SchemaSig)
	le.PutUint64(b[offArenaOffset:], l.ArenaOffset)
	le.PutUint64(b[offArenaSize:], l.ArenaSize)
	if l.RegistryCount > 0 {
		le.PutUint32(b[offRegistryOff:], RegistryOffset)
	}
	le.PutUint32(b[offRegistryCount:], l.RegistryCount)
	le.PutUint64(b[offSlotsOffset:], l.SlotsOffset)
	if l.Flags&FlagMPMC != 0 {
		// claim_seq and read_seq hold the next ticket to claim and to
		// consume; the first record is 1, as the reference initialises them.
		le.PutUint64(b[offClaimSeq:], 1)
		le.PutUint64(b[offReadSeq:], 1)
	}
}
