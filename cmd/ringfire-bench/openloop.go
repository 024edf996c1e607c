package main

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench"
	"github.com/ringfire/ringfire/internal/bench/deployed"
)

// openFlags are the openloop section's flags.
type openFlags struct {
	rates, transport string
	step, warmUp     time.Duration
	zeroLoss         int
}

func (o *openFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.rates, "open-rates", joinInts(bench.DefaultOpenRates), "openloop: offered `rates`, records/s (the run's zero-loss rate is swept too)")
	fs.DurationVar(&o.step, "open-step", 3*time.Second, "openloop: `duration` of each offered rate")
	fs.DurationVar(&o.warmUp, "open-warmup", time.Second, "openloop: `duration` of the warm-up at the first rate, per wait")
	fs.StringVar(&o.transport, "open-transport", deployed.RingsTransport, "openloop: the `transport` of serve and mirror: "+strings.Join(deployed.Transports, ", "))
	fs.IntVar(&o.zeroLoss, "open-zero-loss", 0, "openloop: the zero-loss `rate` (records/s) swept too when the run's stress section measured none for the transport and wait (0: none)")
}

// config sets cfg's openloop fields.
func (o *openFlags) config(cfg *bench.Config) error {
	var err error
	if cfg.OpenRates, err = parseInts("--open-rates", o.rates); err != nil {
		return err
	}
	switch {
	case o.step <= 0:
		return usagef("--open-step %v: must be positive", o.step)
	case o.warmUp <= 0:
		return usagef("--open-warmup %v: must be positive", o.warmUp)
	case o.zeroLoss < 0:
		return usagef("--open-zero-loss %d: must not be negative", o.zeroLoss)
	case !slices.Contains(deployed.Transports, o.transport):
		return usagef("--open-transport %q: want %s", o.transport, strings.Join(deployed.Transports, ", "))
	}
	cfg.OpenStep, cfg.OpenWarmUp, cfg.OpenTransport, cfg.OpenZeroLoss = o.step, o.warmUp, o.transport, o.zeroLoss
	return nil
}
