package idle

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrMode is returned for a mode name that is not one of Modes.
var ErrMode = errors.New("idle: unknown wait mode")

// Mode is how a loop waits when a poll found nothing.
type Mode uint8

// The modes; the zero Mode is Adaptive.
const (
	Adaptive Mode = iota
	Block
	Yield
	Spin
)

var modeNames = [...]string{"adaptive", "block", "yield", "spin"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Yields reports whether a loop in mode m gives its CPU up with
// sched_yield (Yield, Adaptive): such a loop also yields once every
// BusyYieldEvery of work (Hold).
func (m Mode) Yields() bool { return m == Yield || m == Adaptive }

// Modes lists the mode names ParseMode accepts.
func Modes() []string { return modeNames[:] }

// ParseMode parses a mode name.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want %s)", ErrMode, s, strings.Join(modeNames[:], ", "))
}

// The thresholds of Adaptive. A datagram or record that comes within
// SpinFor of the previous one is found by a spinning poll; one that comes
// within YieldFor is found between two sched_yield calls (a bare system
// call when no other thread wants the CPU, a time slice's share when one
// does); a loop idle for longer sleeps and costs nothing. YieldFor covers
// a round trip's turnaround across processes on a busy host, so that a
// reply is found by a poll, not by a wake-up.
//
// By default Adaptive does not spin (DefaultSpinFor 0): with a core to
// spare, sched_yield returns at once and a yielding poll finds work about
// as soon as a spinning one; with more busy threads than cores, a
// spinning loop holds a core the thread it waits for needs, and the round
// trip it waits for gets longer, not shorter. BenchmarkUDPPingPong in
// pingpong_test.go compares the modes on one host; Strategy.SpinFor sets
// a spin phase.
const (
	DefaultSpinFor  = 0
	DefaultYieldFor = 200 * time.Microsecond
)

// Strategy is a Mode with its thresholds.
type Strategy struct {
	Mode Mode
	// SpinFor and YieldFor are Adaptive's phases, measured from the first
	// fruitless poll after work (zero: the defaults; a negative SpinFor
	// is no spin either).
	SpinFor, YieldFor time.Duration
}

func (s Strategy) spinFor() time.Duration {
	if s.SpinFor > 0 {
		return s.SpinFor
	}
	return DefaultSpinFor
}

func (s Strategy) yieldFor() time.Duration {
	if s.YieldFor > 0 {
		return s.YieldFor
	}
	return DefaultYieldFor
}
