package report

// Rings is the rings section at one ring count and wait mode: Rings rings
// served and mirrored by one ringfire run process on each side.
type Rings struct {
	Rings     int    `json:"rings"`
	Transport string `json:"transport"`
	Wait      string `json:"wait"`
	// ZeroLoss is the highest aggregate rate (all rings together, split
	// evenly) every mirror received whole, no gap, no NAK, no repair;
	// Sweep every aggregate rate tried.
	ZeroLoss ZeroLoss    `json:"zero_loss"`
	Sweep    []RingsStep `json:"sweep"`
	// AtOnce is each ring's round trip with a record in flight on every
	// ring at once, InTurn with one record in flight in all, ring after
	// ring (what N rings cost a ring when the others are idle).
	AtOnce RingsRoundTrip `json:"at_once"`
	InTurn RingsRoundTrip `json:"in_turn"`
}

// RingsFloor is the rings section's floor at one count: Datagrams kernel
// UDP datagrams in flight at once between two processes, one thread each
// polling its sockets (Wait), no ring and no ringfire; AtOnce.PerRing is
// per socket, CPU the pinger's and the echo's.
type RingsFloor struct {
	Datagrams int            `json:"datagrams"`
	Wait      string         `json:"wait"`
	AtOnce    RingsRoundTrip `json:"at_once"`
}

// RingsRoundTrip is the round trips of a set of rings.
type RingsRoundTrip struct {
	PerRing  []Percentiles `json:"per_ring"`
	Lat      Percentiles   `json:"round_trip"` // every ring's round trips together
	Measured Duration      `json:"measured"`   // wall time of the round trips
	CPU      []ProcCPU     `json:"cpu"`        // run 1, run 2, pinger, echo
}

// RingsStep is the rings' zero-loss phase at one aggregate rate.
type RingsStep struct {
	Rate          int       `json:"offered_per_s"` // all rings together
	Pushed        uint64    `json:"pushed"`
	Achieved      float64   `json:"achieved_per_s"` // pushed ÷ time until every mirror held them (or the drain bound)
	Drained       bool      `json:"drained"`        // every mirror held every record within drainWait
	NAKs          uint64    `json:"naks"`           // the mirrors' NAK frames
	Gaps          uint64    `json:"gaps"`           // records the mirrors lost (GAP)
	Retransmitted uint64    `json:"retransmitted"`  // records the serves resent for NAKs
	Drops         uint64    `json:"drops"`          // datagrams the mirrors could not use (far ahead, foreign...)
	CPU           []ProcCPU `json:"cpu"`            // run 1 and run 2, pushing and draining
}

// Lossless reports whether every mirror got every record, no repair.
func (s RingsStep) Lossless() bool {
	return s.Drained && s.NAKs == 0 && s.Gaps == 0 && s.Retransmitted == 0
}
