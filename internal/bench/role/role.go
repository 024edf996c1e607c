package role

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/trace"
)

// Env names the environment variable that makes this binary a role
// of a deployed measurement instead of the command: its value is the
// Spec as JSON.
const Env = "RINGFIRE_BENCH_ROLE"

// The roles, each a process of its own.
const (
	RingPinger  = "ring-pinger"  // pushes into ring A, reads B', times the round trip
	RingEcho    = "ring-echo"    // copies A' into ring B
	DgramPinger = "dgram-pinger" // one datagram to the echo and back, timed
	DgramEcho   = "dgram-echo"   // sends every datagram back
)

// Spec is what a role process is told.
type Spec struct {
	Role    string          `json:"role"`
	Ring    string          `json:"ring,omitempty"` // the ring it creates
	Read    string          `json:"read,omitempty"` // the ring it reads
	Wait    string          `json:"wait"`           // ring roles: a bench wait name; datagram roles: a style
	Record  int             `json:"record"`
	WarmUp  int             `json:"warm_up,omitempty"`
	Samples int             `json:"samples,omitempty"`
	Limit   report.Duration `json:"limit,omitempty"`   // a pinger's bound on the time of its samples
	Local   string          `json:"local,omitempty"`   // datagram roles: address to bind
	Peer    string          `json:"peer,omitempty"`    // datagram roles: address to connect to
	Rings   []string        `json:"rings,omitempty"`   // rings roles: the rings it creates
	Reads   []string        `json:"reads,omitempty"`   // rings roles: the rings it reads, in the same order
	Sockets int             `json:"sockets,omitempty"` // dgrams roles: sockets from Local's and Peer's ports on
	// The archive roles (archive.go): the producer's rate (records/s) and
	// ring capacity, for Limit; the archive directory, the recorder's
	// sync mode (archive.ParseSync) and whether it syncs the archive's
	// files once it has written everything.
	Rate     int    `json:"rate,omitempty"`
	Capacity uint64 `json:"capacity,omitempty"`
	Dir      string `json:"dir,omitempty"`
	Sync     string `json:"sync,omitempty"`
	SyncFS   bool   `json:"syncfs,omitempty"`
	// Forward is a Forwarder's delay line (the lines section).
	Forward *ForwardSpec `json:"forward,omitempty"`
}

// The lines a role writes on stdout, in order: ready once what it creates
// exists (its ring, its socket); a pinger then measuring after its
// warm-up and result with the percentiles as JSON after its samples.
// Every role then waits for stdin to close and exits.
const (
	LineReady     = "ready"
	LineMeasuring = "measuring"
	LineResult    = "result "
)

// FromEnv returns the hidden role this process was started for (by the
// deployed and rings sections, which re-execute the running binary), if
// any. The
// binary calls it before anything else and, when ok, runs it with its
// standard input and output instead of the command; run returns when the
// role is done or failed.
func FromEnv() (run func(stdin io.Reader, stdout io.Writer) error, ok bool) {
	v := os.Getenv(Env)
	if v == "" {
		return nil, false
	}
	return func(stdin io.Reader, stdout io.Writer) error {
		trace.Start()
		var s Spec
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return fmt.Errorf("role: %s: %w", Env, err)
		}
		return s.run(stdin, stdout)
	}, true
}

func (s Spec) run(stdin io.Reader, stdout io.Writer) error {
	cmds, gone := watchStdin(stdin)
	out := bufio.NewWriter(stdout)
	var err error
	switch s.Role {
	case RingPinger:
		err = ringPinger(s, out, gone)
	case RingEcho:
		err = ringEcho(s, out, gone)
	case DgramPinger:
		err = dgramPinger(s, out, gone)
	case DgramEcho:
		err = dgramEcho(s, out, gone)
	case RingsPinger:
		err = ringsPinger(s, out, gone)
	case RingsEcho:
		err = ringsEcho(s, out, gone)
	case DgramsPinger:
		err = dgramsPinger(s, out, gone)
	case DgramsEcho:
		err = dgramsEcho(s, out, gone)
	case ArchProducer:
		err = archProducer(s, out, cmds, gone)
	case ArchRecorder:
		err = archRecorder(s, out, cmds, gone)
	case ArchReplayer:
		err = archReplayer(s, out, cmds, gone)
	case OpenProducer:
		err = openProducer(s, out, cmds, gone)
	case OpenReader:
		err = openReader(s, out, cmds, gone)
	case Forwarder:
		err = forwarder(s, out, cmds, gone)
	default:
		err = fmt.Errorf("role: unknown role %q", s.Role)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// watchStdin returns the lines the parent writes on stdin (the commands
// of the archive roles; the other roles take none) and a channel closed
// when stdin reaches its end: the parent closed it (or died).
func watchStdin(stdin io.Reader) (<-chan string, <-chan struct{}) {
	cmds, gone := make(chan string, 16), make(chan struct{})
	go func() {
		defer close(gone)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case cmds <- sc.Text():
			default: // a role that takes no commands
			}
		}
	}()
	return cmds, gone
}

// say writes one protocol line and flushes it.
func say(out *bufio.Writer, line string) error {
	out.WriteString(line + "\n")
	return out.Flush()
}

// WarmUpMax bounds a pinger's warm-up in time, whatever its count.
const WarmUpMax = 10 * time.Second

// roleLimit bounds how long a role waits for the parent to close stdin
// once it has reported.
const roleLimit = time.Minute

// pingLoop is a pinger's run: WarmUp round trips (at most WarmUpMax of
// them), then Samples timed ones (at most Limit of them) recorded in a
// histogram, reported as result. ping does one round trip; first is true
// for the very first (paths still being set up).
func pingLoop(s Spec, out *bufio.Writer, gone <-chan struct{}, ping func(first bool) (time.Duration, error)) error {
	if err := warmUp(s, func(first bool) error { _, err := ping(first); return err }); err != nil {
		return err
	}
	if err := say(out, LineMeasuring); err != nil {
		return err
	}
	h := hist.New()
	end := time.Now().Add(time.Duration(s.Limit))
	for i := 0; i < s.Samples && (i == 0 || time.Now().Before(end)); i++ {
		d, err := ping(i == 0 && s.WarmUp == 0)
		if err != nil {
			return fmt.Errorf("round trip %d: %w", i, err)
		}
		h.Record(d)
	}
	b, err := json.Marshal(h.Percentiles())
	if err != nil {
		return err
	}
	if err := say(out, LineResult+string(b)); err != nil {
		return err
	}
	return awaitGone(gone)
}

// warmUp runs s.WarmUp rounds, at most WarmUpMax of them (the first one
// whatever the time); first is true for the very first (paths still being
// set up).
func warmUp(s Spec, round func(first bool) error) error {
	start := time.Now()
	for i := 0; i < s.WarmUp && (i == 0 || time.Since(start) < WarmUpMax); i++ {
		if err := round(i == 0); err != nil {
			return fmt.Errorf("warm-up round %d: %w", i, err)
		}
	}
	return nil
}

// awaitGone waits (bounded) for the parent to close stdin.
func awaitGone(gone <-chan struct{}) error {
	select {
	case <-gone:
		return nil
	case <-time.After(roleLimit):
		return errors.New("role: parent did not close stdin within " + roleLimit.String())
	}
}
