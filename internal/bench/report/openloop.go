package report

// OpenLoop is the openloop section in one wait: a producer process pushes
// stamped records at each offered rate, ringfire serves them on one host
// and mirrors them on the other, and a reader process there times each
// record's one way.
type OpenLoop struct {
	Transport string `json:"transport"`
	Wait      string `json:"wait"` // a bench wait name: default, yield, loop-yield...
	// ZeroLoss is the run's zero-loss rate swept too (0: none): the stress
	// section's for this transport and wait when the run measured it
	// (ZeroLossFrom "stress"), else the one given (ZeroLossFrom "flag").
	ZeroLoss     int        `json:"zero_loss_per_s,omitempty"`
	ZeroLossFrom string     `json:"zero_loss_from,omitempty"`
	Steps        []OpenStep `json:"steps"`
}

// OpenStep is the open loop at one offered rate.
type OpenStep struct {
	Rate     int      `json:"offered_per_s"`
	Duration Duration `json:"duration"` // of the push
	Pushed   uint64   `json:"pushed"`
	Received uint64   `json:"received"`       // records the reader read
	Achieved float64  `json:"achieved_per_s"` // received ÷ the time to the last one read
	Lapped   uint64   `json:"lapped"`         // overwritten before the reader got to them, or holes
	Lost     uint64   `json:"lost"`           // neither read nor lapped within the bound
	// Wakes counts the producer's sleeps between records due: Pushed ÷
	// Wakes is its mean burst (0: not counted).
	Wakes uint64 `json:"producer_wakes,omitempty"`
	// Lat is each record's one way, producer's push to reader's read.
	Lat Percentiles `json:"one_way"`
	CPU []ProcCPU   `json:"cpu"` // every process, over the push and the drain
}

// KneeP99 is the one-way p99 a rate must keep, in µs, to be at or below
// the knee.
const KneeP99 = 1000

// Kept reports whether s is sustainable: every record read, and a one-way
// p99 of at most KneeP99.
func (s OpenStep) Kept() bool {
	return s.Lapped == 0 && s.Lost == 0 && s.Received > 0 && s.Lat.P99 <= KneeP99
}

// Knee is the highest offered rate up to which every rate of the sweep
// (in offered order) was kept, 0 when the lowest was not; capped when
// the highest rate of the sweep was kept (a lower bound).
func (o OpenLoop) Knee() (rate int, capped bool) {
	for i, s := range o.Steps {
		if !s.Kept() {
			return rate, false
		}
		rate, capped = s.Rate, i == len(o.Steps)-1
	}
	return rate, capped
}
