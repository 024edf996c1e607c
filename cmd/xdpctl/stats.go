package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/ringfire/ringfire/bpf"
)

// sample is one reading of the counters, with per-second rates over the
// interval before it (live mode only).
type sample struct {
	Time       time.Time `json:"time"`
	Seen       uint64    `json:"seen"`
	Redirected uint64    `json:"redirected"`
	Passed     uint64    `json:"passed"`
	Dropped    uint64    `json:"dropped"`
	NoSocket   uint64    `json:"no_socket"`
	Rates      *rates    `json:"rates_per_s,omitempty"`
}

type rates struct {
	Seen, Redirected, Passed, Dropped, NoSocket float64
}

func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c        common
		interval int
		count    int
		asJSON   bool
	)
	fs := newFlagSet("stats", "IFACE [--interval-ms N [--count N]] [--json]",
		"Print the pinned steering program's counters of IFACE, summed over the CPUs:\n"+
			"seen = redirected + passed + dropped; no_socket (steered, but no socket on\n"+
			"the queue) is part of passed. With --interval-ms, print them and the rates\n"+
			"every interval, --count times or until interrupted. JSON is one object per\n"+
			"line.", stderr, &c)
	fs.IntVar(&interval, "interval-ms", 0, "print every `N` ms (0: once)")
	fs.IntVar(&count, "count", 0, "stop after `N` intervals (0: until interrupted)")
	fs.BoolVar(&asJSON, "json", false, "print JSON lines")
	pos, err := parseArgs(fs, args, 1, "IFACE")
	if err != nil {
		return helpOr(err)
	}
	if interval < 0 || count < 0 {
		return usagef("--interval-ms and --count must not be negative")
	}
	if count > 0 && interval == 0 {
		return usagef("--count needs --interval-ms")
	}
	return c.do(func() error {
		p, err := bpf.OpenPinned(c.bpffs, pos[0])
		if err != nil {
			return openHint(err, pos[0], &c)
		}
		defer p.Close()
		out := newStatsPrinter(stdout, asJSON)
		prev, err := read(p, nil)
		if err != nil {
			return err
		}
		if interval == 0 {
			return out.print(prev)
		}
		tick := time.NewTicker(time.Duration(interval) * time.Millisecond)
		defer tick.Stop()
		for i := 0; count == 0 || i < count; i++ {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			s, err := read(p, &prev)
			if err != nil {
				return err
			}
			if err := out.print(s); err != nil {
				return err
			}
			prev = s
		}
		return nil
	})
}

// read samples p's counters, with rates since prev when given.
func read(p *bpf.Program, prev *sample) (sample, error) {
	c, err := p.Counters()
	if err != nil {
		return sample{}, err
	}
	s := sample{Time: time.Now(), Seen: c.Seen, Redirected: c.Redirected, Passed: c.Passed, Dropped: c.Dropped, NoSocket: c.NoSocket}
	if prev != nil {
		d := s.Time.Sub(prev.Time).Seconds()
		r := func(a, b uint64) float64 { return float64(a-b) / d }
		s.Rates = &rates{r(s.Seen, prev.Seen), r(s.Redirected, prev.Redirected), r(s.Passed, prev.Passed), r(s.Dropped, prev.Dropped), r(s.NoSocket, prev.NoSocket)}
	}
	return s, nil
}

type statsPrinter struct {
	w      io.Writer
	json   *json.Encoder
	header bool
}

func newStatsPrinter(w io.Writer, asJSON bool) *statsPrinter {
	sp := &statsPrinter{w: w}
	if asJSON {
		sp.json = json.NewEncoder(w)
	}
	return sp
}

func (sp *statsPrinter) print(s sample) error {
	if sp.json != nil {
		return sp.json.Encode(s)
	}
	tw := tabwriter.NewWriter(sp.w, 12, 0, 2, ' ', tabwriter.AlignRight)
	if s.Rates == nil {
		fmt.Fprintf(tw, "seen\t%d\t\nredirected\t%d\t\npassed\t%d\t\ndropped\t%d\t\nno_socket\t%d\t\n",
			s.Seen, s.Redirected, s.Passed, s.Dropped, s.NoSocket)
		return tw.Flush()
	}
	if !sp.header {
		fmt.Fprint(tw, "time\tseen\tredirected\tpassed\tdropped\tno_socket\tseen/s\tredirected/s\tdropped/s\t\n")
		sp.header = true
	}
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t\n", s.Time.Format("15:04:05.000"),
		s.Seen, s.Redirected, s.Passed, s.Dropped, s.NoSocket, s.Rates.Seen, s.Rates.Redirected, s.Rates.Dropped)
	return tw.Flush()
}
