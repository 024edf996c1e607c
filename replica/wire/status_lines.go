package wire

import (
	"encoding/binary"
	"fmt"
)

// The STATUS of a mirror of two lines (A/B feeds) appends each line's
// counters to the 96 bytes of a STATUS, line A then line B, 120 bytes
// each: a STATUS of StatusLinesSize bytes. A mirror sends it only to a
// source that told it line B's group (GEOMETRY bit6, GeometryLines): such
// a source parses it; any other gets the 96 bytes it knows.
//
//	 0          8         16        24        32        40      48          56
//	 +----------+---------+---------+---------+---------+-------+-----------+
//	 | received | first   | late    | lost    | downs   | ups   | errors    |
//	 +----------+---------+---------+---------+---------+-------+-----------+
//	56                                 96          104                    120
//	 +---------------------------------+-----------+------------------------+
//	 | late_by [5]u64                  | state u64 | transport [16]B        |
//	 +---------------------------------+-----------+------------------------+
//
// state bit 0 is set while the line delivers (up); the other bits are 0.
const (
	// StatusLateBuckets is the number of buckets of StatusLine.LateBy.
	StatusLateBuckets = 5
	statusLineSize    = 120
	// StatusLinesSize is the payload of a STATUS with two lines' counters.
	StatusLinesSize = StatusSize + 2*statusLineSize
	statusLineUp    = 1 // state bit: the line delivers
)

// StatusLine is one line's counters in a STATUS (the mirror's
// replica.LineStats).
type StatusLine struct {
	Transport string // the line's transport ("udp", "xdp", "afpacket"), at most 16 bytes
	Up        bool   // the line delivers

	Received, First, Late, Lost uint64
	LateBy                      [StatusLateBuckets]uint64 // Late by how much later than the other line
	Downs, Ups, Errors          uint64
}

// appendLines appends both lines' counters.
func appendLines(b []byte, ls [2]StatusLine) []byte {
	le := binary.LittleEndian
	for _, l := range ls {
		for _, v := range []uint64{l.Received, l.First, l.Late, l.Lost, l.Downs, l.Ups, l.Errors} {
			b = le.AppendUint64(b, v)
		}
		for _, v := range l.LateBy {
			b = le.AppendUint64(b, v)
		}
		var state uint64
		if l.Up {
			state = statusLineUp
		}
		b = le.AppendUint64(b, state)
		b = appendField(b, l.Transport, statusTransport)
	}
	return b
}

// parseLines decodes both lines' counters (p: 240 bytes), reusing prev's
// transport names where they are the same.
func parseLines(p []byte, prev [2]StatusLine) ([2]StatusLine, error) {
	var ls [2]StatusLine
	le := binary.LittleEndian
	for i := range ls {
		q := p[i*statusLineSize : (i+1)*statusLineSize]
		u := func(k int) uint64 { return le.Uint64(q[8*k:]) }
		l := StatusLine{Received: u(0), First: u(1), Late: u(2), Lost: u(3), Downs: u(4), Ups: u(5), Errors: u(6)}
		for k := range l.LateBy {
			l.LateBy[k] = u(7 + k)
		}
		state := u(12)
		if state&^statusLineUp != 0 {
			return ls, fmt.Errorf("%w: STATUS line %c state %#x (bits past 0 are reserved)", ErrMalformed, 'A'+i, state)
		}
		l.Up = state == statusLineUp
		var err error
		if l.Transport, err = parseField(q[104:120], "line transport", prev[i].Transport); err != nil {
			return ls, err
		}
		ls[i] = l
	}
	return ls, nil
}
