package replica

import (
	"cmp"
	"strings"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// LateBuckets is the number of buckets of LineStats.LateBy; LateBounds
// their upper bounds (the last bucket is everything later).
const LateBuckets = wire.StatusLateBuckets

// LateBounds are the upper bounds of LineStats.LateBy's first buckets:
// a frame this line delivered after the other line, by less than
// LateBounds[i] (and at least LateBounds[i-1]), is counted in LateBy[i].
var LateBounds = [LateBuckets - 1]time.Duration{
	10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
}

// LineStats counts one line of a mirror's two (A/B feeds, lines.go).
// Frames are DATA datagrams, told apart by their first sequence.
type LineStats struct {
	Name string // the line's transport ("udp", "xdp", "afpacket"); "" without lines
	Up   bool   // the line delivers (false once it went dark, until it delivers again)

	Received uint64 // datagrams received on this line (DATA, HEARTBEAT, --dup copies)
	First    uint64 // DATA frames this line delivered before the other line
	Late     uint64 // DATA frames it delivered after the other line had
	// LateBy is Late by how much later than the other line (LateBounds).
	LateBy [LateBuckets]uint64
	// Lost counts DATA frames the other line delivered and this one had
	// not delivered before lineTable later frames had come.
	Lost uint64
	// Downs counts the times the line went dark (nothing from it for
	// LineDark while the other delivered), Ups those it came back.
	Downs, Ups uint64
	// Errors counts failed receives on this line (the other went on).
	Errors uint64
}

func (st *LineStats) late(d time.Duration) {
	st.Late++
	i := 0
	for i < len(LateBounds) && d >= LateBounds[i] {
		i++
	}
	st.LateBy[i]++
}

// statusLines are a mirror's lines as its STATUS carries them.
func statusLines(ls *[2]LineStats) [2]wire.StatusLine {
	var out [2]wire.StatusLine
	for i, l := range ls {
		out[i] = wire.StatusLine{Transport: l.Name, Up: l.Up, Received: l.Received, First: l.First,
			Late: l.Late, Lost: l.Lost, LateBy: l.LateBy, Downs: l.Downs, Ups: l.Ups, Errors: l.Errors}
	}
	return out
}

// reportedLines are the lines a mirror's STATUS reported (MirrorInfo.Lines):
// a line with no transport named is "-", so that Name "" keeps meaning
// "no lines".
func reportedLines(ls [2]wire.StatusLine) [2]LineStats {
	var out [2]LineStats
	for i, l := range ls {
		out[i] = LineStats{Name: cmp.Or(l.Transport, "-"), Up: l.Up, Received: l.Received, First: l.First,
			Late: l.Late, Lost: l.Lost, LateBy: l.LateBy, Downs: l.Downs, Ups: l.Ups, Errors: l.Errors}
	}
	return out
}

// linesTransport is the transport a mirror's STATUS says, made whole
// again when the mirror reports lines and its 16-byte field cut it
// ("udp+udp multicas"): the lines' names joined, then what the cut text
// ends with, " multicast" or " unicast".
func linesTransport(st wire.Status) string {
	if !st.HasLines || len(st.Transport) < wire.StatusTransportSize {
		return st.Transport
	}
	for _, kind := range []string{" multicast", " unicast"} {
		if full := st.Lines[0].Transport + "+" + st.Lines[1].Transport + kind; strings.HasPrefix(full, st.Transport) {
			return full
		}
	}
	return st.Transport
}
