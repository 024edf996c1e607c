package main

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench"
	"github.com/ringfire/ringfire/internal/bench/deployed"
)

// linesFlags are the lines section's flags.
type linesFlags struct {
	transport, wait string
	rate            int
	step, delay     time.Duration
	loss            float64
	seed            uint64
}

func (l *linesFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.transport, "lines-transport", deployed.LinesTransports[0], "lines: both lines' `transport`: "+strings.Join(deployed.LinesTransports, ", "))
	fs.StringVar(&l.wait, "lines-wait", "default", "lines: the wait `mode` of serve and mirror (default: no key, X: wait = X)")
	fs.IntVar(&l.rate, "lines-rate", deployed.DefaultLinesRate, "lines: the delay and loss cases' offered `rate`, records/s (open loop)")
	fs.DurationVar(&l.step, "lines-for", deployed.DefaultLinesFor, "lines: `duration` of each case's timed step (after --open-warmup)")
	fs.DurationVar(&l.delay, "lines-delay", deployed.DefaultLinesDelay, "lines: the `delay` of a delayed line (its forwarder holds each frame to the mirror this long)")
	fs.Float64Var(&l.loss, "lines-loss", deployed.DefaultLinesLoss, "lines: the `probability` each lossy line's forwarder drops a DATA frame, independently per line")
	fs.Uint64Var(&l.seed, "lines-seed", 41, "lines: the drops' PRNG `seed` (line B's: seed+1)")
}

// config sets cfg's lines fields.
func (l *linesFlags) config(cfg *bench.Config) error {
	switch {
	case !slices.Contains(deployed.LinesTransports, l.transport):
		return usagef("--lines-transport %q: want %s (line B is multicast only)", l.transport, strings.Join(deployed.LinesTransports, ", "))
	case l.wait == "" || strings.HasPrefix(l.wait, "-") || strings.HasPrefix(l.wait, "loop"):
		return usagef("--lines-wait %q: want a wait mode name (default, spin, yield...; not a loop's)", l.wait)
	case l.rate <= 0 || l.rate > 1_000_000:
		return usagef("--lines-rate %d: want 1..1000000 records/s", l.rate)
	case l.step <= 0 || l.step > 30*time.Second:
		return usagef("--lines-for %v: want more than 0, at most 30s (a forwarder waits at most 1m for its stop)", l.step)
	case l.delay <= 0 || l.delay > 100*time.Millisecond:
		return usagef("--lines-delay %v: want more than 0, at most 100ms", l.delay)
	case !(l.loss > 0 && l.loss < 1):
		return usagef("--lines-loss %v: want a probability above 0 and below 1", l.loss)
	case l.seed == 0:
		return usagef("--lines-seed: must not be 0")
	}
	cfg.Lines = deployed.LinesConfig{Transport: l.transport, Wait: l.wait, Rate: l.rate, For: l.step, Delay: l.delay, Loss: l.loss, Seed: l.seed}
	return nil
}
