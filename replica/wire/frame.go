package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	// KindSession: source → mirror, TCP, keyed connections only (inside
	// TLS, after GEOMETRY and MULTICAST): the source incarnation.
	KindSession Kind = 10
	// KindError: source → mirror, TCP: why the source refuses the
	// connection (a keyed source to a peer without the key, and the
	// reverse), just before it closes.
	KindError Kind = 11
	// KindReport: source → mirror, TCP, only after GeometryReportOnAsk:
	// send a STATUS as soon as the records up to the header's seq are
	// applied (an AwaitApplied, or a graceful stop, waits for them).
	// Header only.
	KindReport Kind = 12
	kindLast        = KindReport
)

var kindNames = [...]string{"", "HELLO", "GEOMETRY", "DATA", "GAP", "HEARTBEAT", "NAK", "MULTICAST", "PUNCH", "STATUS",
	"SESSION", "ERROR", "REPORT"}

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

	// Payload sizes of the kinds whose payload has a fixed size (STATUS:
	// StatusSize, or StatusLinesSize with two lines' counters).
	HelloSize     = 16
	GeometrySize  = 48
	MulticastSize = 16
	NakSize       = 8

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
	// HelloKeyed: the mirror speaks the keyed extension (it sends HELLO
	// inside TLS; the source answers GEOMETRY, MULTICAST, then SESSION).
	HelloKeyed uint8 = 1 << 3
	// HelloSession64: the mirror takes the wide session extension: the
	// source answers GEOMETRY with GeometrySession64 and a SESSION frame,
	// and its datagrams to this mirror end with the 64-bit session id
	// when SESSION says so (SessionTrailer).
	HelloSession64 uint8 = 1 << 4
	// HelloReportOnAsk (with HelloTelemetry): between its periodic STATUS
	// frames the mirror reports early only when the source asks (REPORT),
	// not whenever it has caught up; the source acknowledges with
	// GeometryReportOnAsk. A source nobody waits on then hears from its
	// mirrors once per interval, not once per burst of records.
	HelloReportOnAsk uint8 = 1 << 5
	// HelloHistory: the mirror takes records its source's ring no longer
	// holds from the source's history (an archive of the ring), over TCP,
	// where a version-1 source sends GAP; the source acknowledges with
	// GeometryHistory.
	HelloHistory uint8 = 1 << 6
	// HelloLines: the mirror can take a second line (A/B feeds): the
	// source acknowledges with GeometryLines and a second MULTICAST frame
	// describing line B.
	HelloLines uint8 = 1 << 7
)

// GEOMETRY flags.
const (
	GeometryReset     uint8 = 1 << 0 // the mirror must start a fresh ring
	GeometryMulticast uint8 = 1 << 1 // a MULTICAST frame follows
	// GeometryTelemetry: the source takes STATUS frames (set only for a
	// mirror that announced HelloTelemetry).
	GeometryTelemetry uint8 = 1 << 2
	// GeometrySession64: a SESSION frame follows MULTICAST (set only for a
	// mirror that announced HelloSession64, or a keyed one).
	GeometrySession64 uint8 = 1 << 3
	// GeometryReportOnAsk: the source sends REPORT when it needs an early
	// STATUS (set only with GeometryTelemetry, for a mirror that announced
	// HelloReportOnAsk).
	GeometryReportOnAsk uint8 = 1 << 4
	// GeometryHistory: the source serves this session from its history
	// what its ring no longer holds (set only for a mirror that announced
	// HelloHistory, by a source that has a history).
	GeometryHistory uint8 = 1 << 5
	// GeometryLines: a second MULTICAST frame, line B's, follows the first
	// (set only for a mirror that announced HelloLines, by a source that
	// sends its datagrams on two lines).
	GeometryLines uint8 = 1 << 6
)

// HELLO start sequences.
const (
	StartNewest uint64 = 0          // the newest record, then those published after it
	StartOldest uint64 = ^uint64(0) // everything the source still retains
)

// Errors of the frame codec.
var (
	ErrMalformed = errors.New("wire: malformed frame")
	ErrMagic     = errors.New("wire: bad magic")
	ErrVersion   = errors.New("wire: unsupported protocol version")
	ErrTooLarge  = errors.New("wire: frame too large")
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
	if want, fixed := fixedLen(h.Kind); fixed && int(h.Len) != want && !statusLines(h) {
		return h, fmt.Errorf("%w: %v payload of %d bytes, want %d", ErrMalformed, h.Kind, h.Len, want)
	}
	return h, nil
}

// statusLines reports a STATUS with two lines' counters (status_lines.go),
// the one kind of fixed size with a second size.
func statusLines(h Header) bool { return h.Kind == KindStatus && h.Len == StatusLinesSize }

// fixedLen is the payload length of kinds whose payload has a fixed size.
func fixedLen(k Kind) (int, bool) {
	switch k {
	case KindHello:
		return HelloSize, true
	case KindGeometry:
		return GeometrySize, true
	case KindMulticast:
		return MulticastSize, true
	case KindNak:
		return NakSize, true
	case KindStatus:
		return StatusSize, true
	case KindSession:
		return SessionSize, true
	case KindGap, KindHeartbeat, KindPunch:
		return 0, true
	}
	return 0, false
}

// AppendNak appends a NAK asking for records first..last (inclusive).
func AppendNak(b []byte, first, last uint64) []byte {
	b = appendHeader(b, Header{Kind: KindNak, Len: NakSize, Seq: first})
	return binary.LittleEndian.AppendUint64(b, last)
}

// ParseNak decodes a NAK and checks its range: first ≥ 1, last ≥ first, at
// most MaxNakRecords records.
func ParseNak(h Header, p []byte) (first, last uint64, err error) {
	if len(p) != NakSize {
		return 0, 0, fmt.Errorf("%w: NAK of %d bytes", ErrMalformed, len(p))
	}
	first, last = h.Seq, binary.LittleEndian.Uint64(p)
	if first == 0 || last < first || last-first >= MaxNakRecords {
		return first, last, fmt.Errorf("%w: NAK range %d..%d (at most %d records from 1)", ErrMalformed, first, last, MaxNakRecords)
	}
	return first, last, nil
}

// AppendReport appends a REPORT asking for a STATUS once seq is applied.
func AppendReport(b []byte, seq uint64) []byte {
	return appendHeader(b, Header{Kind: KindReport, Seq: seq})
}

// ParseReport decodes a REPORT strictly: header only, no flags, no count,
// a sequence from 1.
func ParseReport(h Header, p []byte) (uint64, error) {
	if h.Kind != KindReport || len(p) != 0 || h.Flags != 0 || h.Count != 0 || h.Seq == 0 {
		return 0, fmt.Errorf("%w: REPORT (%v, %d bytes, flags %#x, count %d, seq %d)", ErrMalformed, h.Kind, len(p), h.Flags, h.Count, h.Seq)
	}
	return h.Seq, nil
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
