package report

import "time"

// Report is everything one `ringfire-bench` run measured, on one machine,
// in one run: the figures are meant to be compared with each other.
type Report struct {
	Machine  Machine    `json:"machine"`
	Command  string     `json:"command"`
	Started  time.Time  `json:"started"`
	Elapsed  Duration   `json:"elapsed"`
	Record   int        `json:"record_bytes"` // payload bytes per record
	PingPong []Latency  `json:"pingpong"`     // one per transport
	Datagram []Latency  `json:"datagram"`     // one datagram A → B → A, no ring
	Stress   []Stress   `json:"stress"`       // per transport and offered rate
	ZeroLoss []ZeroLoss `json:"zero_loss"`    // per transport and wait: the sweep's best
	Stages   []Latency  `json:"stages"`       // push-to-read, per stage
	Fanout   []Fanout   `json:"fanout"`       // per transport and mirror count
	SendCost []SendCost `json:"send_cost"`    // sendmmsg to N mirrors against N sendto
	// Deployed is the ring-to-ring round trip with every endpoint its own
	// process (pinger, serve, mirror, echo, serve, mirror; or, for a
	// loop's wait name, pinger, one ringfire run per host, echo), per
	// transport and wait mode; DeployedDatagram the datagram alone between
	// two processes, per waiting style; DeployedRelay the hand-offs alone,
	// Procs processes passing a record on through as many rings, no
	// network, per process count and wait.
	Deployed         []Deployed `json:"deployed"`
	DeployedDatagram []Deployed `json:"deployed_datagram"`
	DeployedRelay    []Deployed `json:"deployed_relay,omitempty"`
	// Rings is N rings served and mirrored by one ringfire run process
	// per side, per ring count and wait mode (one ring alone first).
	Rings []Rings `json:"rings,omitempty"`
	// RingsFloor is the rings section's floor: datagrams at once, one
	// measurement per ring count.
	RingsFloor []RingsFloor `json:"rings_floor,omitempty"`
	// OpenLoop is one-way latency at fixed offered rates, per wait.
	OpenLoop []OpenLoop `json:"open_loop,omitempty"`
	// Lines is A/B lines: zero-loss rates, the one way with a line
	// delayed, repairs with both lines losing.
	Lines *Lines `json:"lines,omitempty"`
	// Archive is recording into an archive, replay, seek and compression.
	Archive *Archive `json:"archive,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Load    string `json:"load"` // /proc/loadavg at the start
	Procs   int    `json:"gomaxprocs"`
	Network string `json:"network"`
	// Stall: the machine's own pauses, measured before the run.
	Stall Stall `json:"stall"`
}

// Duration marshals as a string ("1.5s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Percentiles of a latency distribution, in microseconds.
type Percentiles struct {
	Samples int64   `json:"samples"`
	Avg     float64 `json:"avg_us"`
	Min     float64 `json:"min_us"`
	P50     float64 `json:"p50_us"`
	P75     float64 `json:"p75_us"`
	P90     float64 `json:"p90_us"`
	P99     float64 `json:"p99_us"`
	P999    float64 `json:"p99_9_us"`
	P9999   float64 `json:"p99_99_us"`
	Max     float64 `json:"max_us"`
}

// Latency is one named distribution: a transport's round trip, or a
// stage's push-to-read time.
type Latency struct {
	Name string      `json:"name"`
	Lat  Percentiles `json:"latency"`
}

// Stress is an open-loop run at a fixed offered rate for a fixed time.
type Stress struct {
	Transport     string      `json:"transport"`
	Rate          int         `json:"offered_per_s"`
	Duration      Duration    `json:"duration"`
	Pushed        uint64      `json:"pushed"`
	Delivered     uint64      `json:"delivered"` // echoes received
	DeliveredPct  float64     `json:"delivered_pct"`
	Disorder      uint64      `json:"disorder"` // echoes older than one already seen
	Achieved      float64     `json:"achieved_per_s"`
	Lat           Percentiles `json:"round_trip"`
	NAKs          uint64      `json:"naks"`
	Retransmitted uint64      `json:"retransmitted"`
	Gaps          uint64      `json:"gaps"`
}

// Lossless reports whether every record came back with no gap and no
// repair.
func (s Stress) Lossless() bool {
	return s.Delivered == s.Pushed && s.Gaps == 0 && s.Retransmitted == 0
}

// ZeroLoss is the highest offered rate a transport carried without loss.
type ZeroLoss struct {
	Transport string  `json:"transport"`
	Wait      string  `json:"wait,omitempty"` // how its sender and mirror waited (a bench wait name; empty in reports older than the per-wait sweep: the default)
	Rate      int     `json:"offered_per_s"`  // 0: none of the sweep's rates
	Achieved  float64 `json:"achieved_per_s"`
	Capped    bool    `json:"capped"` // lossless at the top of the sweep: a lower bound
}

// waitName is how z's sender and mirror waited.
func (z ZeroLoss) waitName() string { return ZeroLossWait(z.Wait) }

// label names z in a chart: its transport, and its wait unless that is
// the default.
func (z ZeroLoss) label() string {
	if w := z.waitName(); w != "adaptive" {
		return z.Transport + " " + w
	}
	return z.Transport
}

// Fanout is one source serving Mirrors mirrors over one transport.
type Fanout struct {
	Transport string        `json:"transport"`
	Mirrors   int           `json:"mirrors"`
	PerMirror []Percentiles `json:"per_mirror"` // push-to-read at each mirror
	PushNs    float64       `json:"push_ns"`    // producer's Push cost with the mirrors attached
	BaseNs    float64       `json:"base_push_ns"`
}

// SendCost compares one sendmmsg to N destinations with N sendto calls.
type SendCost struct {
	Mirrors    int     `json:"mirrors"`
	SendmmsgNs float64 `json:"sendmmsg_ns_per_mirror"`
	SendtoNs   float64 `json:"sendto_ns_per_mirror"`
}

// Deployed is one closed-loop measurement across processes: its round
// trips and the CPU each process used while they were taken.
type Deployed struct {
	Transport string      `json:"transport"`           // a ring transport, "udp" for the datagram alone, "shm" for the relay
	Wait      string      `json:"wait"`                // the wait mode, or the datagram waiting style
	Procs     int         `json:"processes,omitempty"` // the relay's processes
	Lat       Percentiles `json:"round_trip"`
	Measured  Duration    `json:"measured"`        // wall time of the samples
	CPU       []ProcCPU   `json:"cpu"`             // one per process
	Hiccups   Hiccups     `json:"hiccups"`         // a sleeping thread of the bench, meanwhile
	Hops      []Hop       `json:"hops,omitempty"`  // with Config.Trace: where the round trip went
	Tails     []TailHop   `json:"tails,omitempty"` // with Config.Trace: where the slowest round trips went
}

// ProcCPU is the CPU one process used during a measurement.
type ProcCPU struct {
	Role    string  `json:"role"` // pinger, serve A, mirror A', echo, serve B, mirror B'
	Pid     int     `json:"pid"`
	Seconds float64 `json:"cpu_s"`     // utime+stime over the measurement
	PerSec  float64 `json:"cpu_per_s"` // Seconds per second of wall time: cores used
}

// Hop is one stage-to-stage leg of the ring-to-ring round trip, from the
// stamps the processes took (internal/trace; ringfire-bench --trace).
type Hop struct {
	From string      `json:"from"`
	To   string      `json:"to"`
	Lat  Percentiles `json:"latency"`
}

// TailHop is where some of the slowest round trips went: of the Tail
// samples slower than a percentile of the round trip (Above), the
// Samples whose largest excess (a hop's time over that hop's median) was
// on this hop, and how much that was. Traced of them fall in the
// scheduler's trace, which says how the thread that ends the hop (its
// process's hot loop) spent the hop: on a CPU (Running: our own work, a
// page fault, a syscall, the runtime), runnable but not on one
// (Runnable: the scheduler's delay) or asleep (Sleeping: waiting to be
// woken), shares of the traced samples' hop time.
type TailHop struct {
	Above     string  `json:"above"` // "p99" or "p99.9"
	Tail      int     `json:"tail"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Samples   int     `json:"samples"`
	ExcessP50 float64 `json:"excess_p50_us"`
	Traced    int     `json:"traced"`
	Running   float64 `json:"running"`
	Runnable  float64 `json:"runnable"`
	Sleeping  float64 `json:"sleeping"`
}
