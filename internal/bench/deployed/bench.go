package deployed

import (
	"time"

	"github.com/ringfire/ringfire/internal/netns"
)

// Config is what the deployed and rings measurements take from a run's
// configuration (bench.Config, whose fields of the same names set them).
type Config struct {
	Record int // payload bytes per record
	// WarmUp and Samples are the round trips a pinger takes before and
	// while it measures, the samples bounded in time by DeployedFor.
	WarmUp, Samples int
	DeployedFor     time.Duration
	Ringfire        string // the ringfire binary ("": next to this one, else built)
	Trace           bool   // every process stamps the records: report the hops
	// Rates and Stress are the rings section's zero-loss sweep: the
	// aggregate rates tried, each for Stress.
	Rates  []int
	Stress time.Duration
	// OpenStep and OpenWarmUp are the openloop section's time per offered
	// rate and its warm-up before the first.
	OpenStep, OpenWarmUp time.Duration
	// Lines is the lines section's configuration (LinesConfig.Defaults
	// fills it).
	Lines LinesConfig
}

// Bench measures the sections whose endpoints are processes of their
// own, in namespaces of the run's owner and rings under dir. Its
// topology (two namespaces joined by two veth pairs, a launcher in each)
// is made at its first measurement and kept until Close.
type Bench struct {
	owner *netns.Owner
	dir   string
	cfg   Config
	base  time.Time    // the rings load stamps records with the time since base
	net   *deployedNet // nil until the first measurement
	lines *linesNet    // the lines section's middles, nil until its first delay line
}

// New returns the deployed measurements of a run; it starts nothing.
func New(owner *netns.Owner, dir string, cfg Config) *Bench {
	return &Bench{owner: owner, dir: dir, cfg: cfg, base: time.Now()}
}

// Close stops the launchers and removes a ringfire binary built for the
// run; the namespaces are the owner's to remove.
func (b *Bench) Close() {
	if b.lines != nil {
		b.lines.close()
		b.lines = nil
	}
	if b.net != nil {
		b.net.close()
		b.net = nil
	}
}

// stamp is the time since b was made, as the rings load stores it in
// records.
func (b *Bench) stamp() uint64 { return uint64(time.Since(b.base)) }
