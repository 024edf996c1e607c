package report

// Lines is the lines section: a source sending every datagram on two
// lines (serve --multicast-b) and a mirror taking both (mirror --iface-b),
// each endpoint a process of its own (one ringfire run per host).
type Lines struct {
	Transport string `json:"transport"` // xdp-multicast or udp-multicast, both lines
	Wait      string `json:"wait"`
	// OneLine and TwoLines are the zero-loss sweeps over direct links
	// (the deployed topology's veth0, and veth1 for line B).
	OneLine  LinesSweep `json:"one_line"`
	TwoLines LinesSweep `json:"two_lines"`
	// Cases are the open loop at Rate through the delay lines (and one
	// line direct, the forwarders' cost), one case per fault.
	Rate  int         `json:"rate_per_s"`
	Cases []LinesCase `json:"cases"`
}

// LinesSweep is one zero-loss sweep: its steps and best rate.
type LinesSweep struct {
	Lines    int         `json:"lines"`
	Sweep    []RingsStep `json:"sweep"`
	ZeroLoss ZeroLoss    `json:"zero_loss"`
}

// The lines cases' names.
const (
	LinesDirect  = "A direct"          // line A alone, no forwarder
	LinesDirect2 = "A+B direct"        // both lines, no forwarder
	LinesA       = "A"                 // line A alone through its forwarder
	LinesAOfAB   = "A of A+B"          // the source sends on both, the mirror takes A only
	LinesAB      = "A+B"               // both lines clean
	LinesBSlow   = "A+B, B delayed"    // line B delayed
	LinesASlow   = "A+B, A delayed"    // line A delayed
	LinesLossy   = "A+B, loss on both" // each line losing DATA frames
	LinesLineA   = "A"
	LinesLineB   = "B"
	linesNoDelay = 0
)

// LinesCase is one fault: the one way of the records, the mirror's
// repairs and per-line counters, and each forwarder's.
type LinesCase struct {
	Name   string   `json:"name"`
	Lines  int      `json:"lines"`            // lines the mirror takes
	Sent   int      `json:"sent"`             // lines the source sends on
	Direct bool     `json:"direct,omitempty"` // no forwarder
	DelayA Duration `json:"delay_a"`
	DelayB Duration `json:"delay_b"`
	LossA  float64  `json:"loss_a"`
	LossB  float64  `json:"loss_b"`
	Step   OpenStep `json:"step"` // the timed step (after a warm-up)
	// NAKs and Gaps are the mirror's over the whole case, warm-up
	// included, as are the forwarders' and LostBoth.
	NAKs       uint64          `json:"naks"`
	Gaps       uint64          `json:"gaps"`
	PerLine    []LineCounts    `json:"per_line,omitempty"`
	Forwarders []ForwardCounts `json:"forwarders,omitempty"`
	// LostBoth is the DATA frames both forwarders dropped (by first
	// sequence).
	LostBoth uint64 `json:"lost_both"`
}

// LineCounts is the mirror's counters of one line.
type LineCounts struct {
	Line      string `json:"line"`
	Datagrams uint64 `json:"datagrams"`
	First     uint64 `json:"first"`
	Late      uint64 `json:"late"`
	Lost      uint64 `json:"lost"`
}

// ForwardCounts is one forwarder's counters.
type ForwardCounts struct {
	Line        string   `json:"line"`
	Forward     uint64   `json:"forward"`
	Back        uint64   `json:"back"`
	Data        uint64   `json:"data"`
	DataDropped uint64   `json:"data_dropped"`
	Overflow    uint64   `json:"overflow"`
	MaxLate     Duration `json:"max_late"`
}

// Case is the case named name, if measured.
func (l *Lines) Case(name string) (LinesCase, bool) {
	for _, c := range l.Cases {
		if c.Name == name {
			return c, true
		}
	}
	return LinesCase{}, false
}

// Frames is the DATA frames line A's forwarder saw (the source sent as
// many on each line).
func (c LinesCase) Frames() uint64 {
	for _, f := range c.Forwarders {
		if f.Line == LinesLineA {
			return f.Data
		}
	}
	return 0
}

// dropped is the DATA frames the forwarder of line dropped.
func (c LinesCase) dropped(line string) uint64 {
	for _, f := range c.Forwarders {
		if f.Line == line {
			return f.DataDropped
		}
	}
	return 0
}
