package report

// ArchiveCatchup is a mirror started with --from 1 long after sequence 1
// was overwritten: ringfire serve --archive answers it from the archive
// over TCP (the repair budget off), then it goes on live. Each endpoint
// is a process of its own: the producer and the recorder, serve in one
// namespace, mirror in the other.
type ArchiveCatchup struct {
	Dir       string `json:"dir"`       // the archive's directory: path, filesystem, device
	Transport string `json:"transport"` // the live records' path (the catch-up is TCP): tcp or xdp-unicast
	Capacity  uint64 `json:"ring_capacity"`
	Record    int    `json:"record_bytes"`
	// Records were written by the producer (at FillRate) and archived
	// before the mirror started: sequences 1..Records, the ring holding
	// the last Capacity of them.
	Records      uint64 `json:"records"`
	FillRate     int    `json:"fill_per_s"`
	RecorderGaps uint64 `json:"recorder_gaps"` // gap entries in the archive: none, or the measurement is void
	// Elapsed: the mirror's start to its ring holding sequence Records.
	Elapsed Duration    `json:"elapsed"`
	CPU     []ProcCPU   `json:"cpu"` // serve, mirror, recorder, producer over Elapsed
	Live    CatchupLive `json:"live"`
}

// CatchupLive is what followed the catch-up: the producer pushing at a
// fixed rate, the recorder archiving, the mirror following live.
type CatchupLive struct {
	Rate    int      `json:"offered_per_s"`
	Pushed  uint64   `json:"pushed"`
	Last    uint64   `json:"last"` // the last sequence pushed
	Elapsed Duration `json:"elapsed"`
	// The mirror's final counters (mirror --json): records written, its
	// next sequence, those taken as history over TCP, gap records, and
	// the datagrams it dropped as already written or overtaken.
	Written    uint64 `json:"written"`
	Next       uint64 `json:"next"`
	History    uint64 `json:"history"`
	Gaps       uint64 `json:"gaps"`
	Duplicates uint64 `json:"duplicates"`
	Stale      uint64 `json:"stale"`
	// Compared: the last records of the mirror's ring compared byte by
	// byte with the source ring's, each checked to be its sequence's
	// record (synth.Check); Identical when all were.
	Compared  uint64    `json:"compared"`
	Identical bool      `json:"identical"`
	CPU       []ProcCPU `json:"cpu"` // serve, mirror, recorder, producer over Elapsed
}

// Complete reports whether the mirror ended holding every record once:
// no gap in the archive or the mirror, every sequence 1..Last written
// exactly once (the mirror writes in order: Written == Last and Next ==
// Last+1), and its last records the source's.
func (c ArchiveCatchup) Complete() bool {
	l := c.Live
	return c.RecorderGaps == 0 && l.Gaps == 0 && l.Last > 0 && l.Written == l.Last && l.Next == l.Last+1 && l.Identical
}
