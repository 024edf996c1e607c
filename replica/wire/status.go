package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"
)

// STATUS payload layout (an extension, see docs/protocol.md): the header's
// seq is the last sequence applied (published in the mirror ring, readable
// there), its count the mirror's reporting interval in milliseconds.
//
//	 0         8          16               24         32          40        48
//	 +---------+----------+----------------+----------+-----------+---------+
//	 | lag u64 | naks u64 | retransmit u64 | gaps u64 | drops u64 | id u64  |
//	 +---------+----------+----------------+----------+-----------+---------+
//	48                        64                                          96
//	 +------------------------+-------------------------------------------+
//	 | transport [16]B        | name [32]B                                |
//	 +------------------------+-------------------------------------------+
const (
	StatusSize      = 96
	statusTransport = StatusTransportSize
	// StatusTransportSize is the bytes of the transport field: a longer
	// transport is cut.
	StatusTransportSize = 16
	statusName          = 32 // bytes of the name field
	// DefaultStatusInterval is how often a mirror reports STATUS.
	DefaultStatusInterval = 100 * time.Millisecond
)

// Status is what a mirror reports in a STATUS frame. The counters are the
// mirror's since it started (they survive its reconnections).
type Status struct {
	Applied  uint64        // last sequence published in the mirror ring (header seq)
	Interval time.Duration // the mirror's reporting interval (header count, ms)

	Lag           uint64 // records behind the newest sequence the mirror heard of
	Naks          uint64 // NAK frames sent
	Retransmitted uint64 // records received in answer to NAKs
	Gaps          uint64 // records the source no longer held
	Drops         uint64 // datagrams received and unusable: overflow, malformed, other session
	ID            uint64 // the mirror's identity: stable across reconnections and restarts
	Transport     string // transport in use, at most 16 bytes ("udp multicast", "tcp", ...)
	Name          string // the mirror's name, at most 32 bytes

	// HasLines says the STATUS carries Lines, the counters of the
	// mirror's two lines (A, B): a STATUS of StatusLinesSize bytes, sent
	// only to a source that sends on two lines (status_lines.go).
	HasLines bool
	Lines    [2]StatusLine
}

// AppendStatus appends a STATUS frame. Transport and Name are cut to their
// field sizes (on a character boundary); Interval is clamped to 1..65535 ms.
func AppendStatus(b []byte, st Status) []byte {
	ms := min(max(st.Interval.Milliseconds(), 1), 65535)
	n := uint32(StatusSize)
	if st.HasLines {
		n = StatusLinesSize
	}
	b = appendHeader(b, Header{Kind: KindStatus, Count: uint16(ms), Len: n, Seq: st.Applied})
	le := binary.LittleEndian
	for _, v := range []uint64{st.Lag, st.Naks, st.Retransmitted, st.Gaps, st.Drops, st.ID} {
		b = le.AppendUint64(b, v)
	}
	b = appendField(b, st.Transport, statusTransport)
	b = appendField(b, st.Name, statusName)
	if st.HasLines {
		b = appendLines(b, st.Lines)
	}
	return b
}

// appendField appends s cut to n bytes (whole characters), NUL-padded.
func appendField(b []byte, s string, n int) []byte {
	s = cutString(s, n)
	b = append(b, s...)
	for range n - len(s) {
		b = append(b, 0)
	}
	return b
}

// cutString cuts s to at most n bytes without splitting a character.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ParseStatus decodes a STATUS frame strictly: a 96-byte payload (or
// StatusLinesSize, with the lines' counters), an interval of at least
// 1 ms, no header flags (reserved), text fields of UTF-8 without NUL
// bytes, padded with NULs.
func ParseStatus(h Header, p []byte) (Status, error) { return ParseStatusAfter(h, p, Status{}) }

// ParseStatusAfter is ParseStatus that reuses prev's text fields where the
// frame's are the same: a mirror's name and transport rarely change, so a
// STATUS every interval then allocates nothing.
func ParseStatusAfter(h Header, p []byte, prev Status) (Status, error) {
	if h.Kind != KindStatus || (len(p) != StatusSize && len(p) != StatusLinesSize) {
		return Status{}, fmt.Errorf("%w: STATUS of %d bytes", ErrMalformed, len(p))
	}
	if h.Count == 0 || h.Flags != 0 {
		return Status{}, fmt.Errorf("%w: STATUS interval %d, flags %#x (want ≥ 1 ms, no flags)", ErrMalformed, h.Count, h.Flags)
	}
	le := binary.LittleEndian
	st := Status{Applied: h.Seq, Interval: time.Duration(h.Count) * time.Millisecond,
		Lag: le.Uint64(p), Naks: le.Uint64(p[8:]), Retransmitted: le.Uint64(p[16:]),
		Gaps: le.Uint64(p[24:]), Drops: le.Uint64(p[32:]), ID: le.Uint64(p[40:])}
	var err error
	if st.Transport, err = parseField(p[48:64], "transport", prev.Transport); err != nil {
		return Status{}, err
	}
	if st.Name, err = parseField(p[64:96], "name", prev.Name); err != nil {
		return Status{}, err
	}
	if len(p) == StatusLinesSize {
		st.HasLines = true
		if st.Lines, err = parseLines(p[StatusSize:], prev.Lines); err != nil {
			return Status{}, err
		}
	}
	return st, nil
}

// parseField decodes a NUL-padded UTF-8 text field; prev when it is the
// same text (the comparison allocates nothing).
func parseField(f []byte, what, prev string) (string, error) {
	n := bytes.IndexByte(f, 0)
	if n < 0 {
		n = len(f)
	}
	for _, c := range f[n:] {
		if c != 0 {
			return "", fmt.Errorf("%w: STATUS %s: bytes after the padding", ErrMalformed, what)
		}
	}
	if !utf8.Valid(f[:n]) {
		return "", fmt.Errorf("%w: STATUS %s: not UTF-8", ErrMalformed, what)
	}
	if string(f[:n]) == prev {
		return prev, nil
	}
	return string(f[:n]), nil
}
