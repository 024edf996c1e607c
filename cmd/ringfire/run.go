package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/cli"
	"github.com/ringfire/ringfire/internal/supervisor"
	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
)

const runHelp = `Run serves, mirrors and records every ring of CONFIG, a TOML file, in one
process: one [[serve]] table per served ring, one [[mirror]] table per
mirror and one [[record]] table (ring and dir keys) per archive, whose keys
are the long flags of serve, mirror and record. All of them share each
interface's XDP program and AF_XDP sockets (the kernel takes one program per
interface and one socket per queue, so one process per host carries every
ring over kernel bypass). Every serve and mirror runs on one polling thread
(the loop key: a wait mode, adaptive by default; loop = "none", or tables
with their own wait, spin or cpu key and no loop key, run a thread per ring
and direction). Every table is checked before any unit starts; a
unit that fails is logged, reported by /healthz and restarted after a
back-off (1 s, doubling to 30 s). SIGHUP rereads CONFIG once it has not
changed for 1 s, so that a file rewritten in place is not read half written
(write it elsewhere and rename it into place: a rename is atomic): tables
added start, removed ones stop, changed ones restart alone, the others go
on; a file that no longer parses or still changes after 10 s, a table that
fails its checks or a changed loop, loops or loop-cpu key is refused with
the error logged and the running set kept (metrics and log-format take
effect at the next start). SIGTERM or SIGINT stop every unit cleanly (exit
0). The metrics key serves /metrics (a ring label on every ringfire_ series,
and the process's go_ and process_ series), /mirrors?ring=NAME, /healthz and
/readyz (ready once every serve listens, every mirror has connected once and
every recorder has opened its archive): at most 64 connections, each closed
after 5 s idle. --print-example prints a commented file.`

//go:embed run_example.toml
var runExample string

// runSupervise is the run command: it parses its flags and CONFIG, sets
// up the logger, and runs the file's units under a supervisor.
func runSupervise(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "CONFIG [flags]", runHelp, stderr)
	example := fs.Bool("print-example", false, "print a commented example CONFIG and exit")
	logFormat := fs.String("log-format", "", "log as `text` or json (default: the file's log-format, else text)")
	need := 1
	for _, a := range args {
		if a == "--print-example" || a == "-print-example" {
			need = 0
		}
	}
	pos, err := cli.ParseArgs("ringfire", fs, args, need, "CONFIG")
	if err != nil {
		return helpOr(err)
	}
	if *example {
		_, err := io.WriteString(stdout, runExample)
		return err
	}
	file := pos[0]
	c, err := loadRunConfig(file)
	if err != nil {
		return err
	}
	format := c.LogFormat
	if *logFormat != "" {
		format = *logFormat
	}
	log, err := newLogger(format, stderr)
	if err != nil {
		return err
	}
	return serveRunConfig(ctx, file, c, log)
}

// serveRunConfig runs c's units until ctx ends, rereading file on SIGHUP.
func serveRunConfig(ctx context.Context, file string, c *supervisor.Config, log *slog.Logger) error {
	// RINGFIRE_TRACE: the stamps of every unit, once all have stopped.
	defer trace.Flush("run-" + strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := newUnitBuilder(log)
	sup := supervisor.New(supervisor.Options{Build: b.build, Events: func(e supervisor.Event) { logUnitEvent(log, e) }})
	set := &unitSet{sup: sup}
	if c.Loop != "" {
		stopLoop, err := startLoops(b, c, log)
		if err != nil {
			return err
		}
		set.loops = b.loops
		defer stopLoop() // once the units have stopped: they have left the loops
	}
	defer func() { cancel(); sup.Wait() }() // every unit stopped, on every return
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// Apply builds every unit, its keys checked, before any starts: a bad
	// table is an error before the first socket opens.
	ch, err := sup.Apply(ctx, c)
	if err != nil {
		return &usageError{Err: err}
	}
	if c.Metrics != "" {
		addr, err := metricsAddr(c.Metrics)
		if err != nil {
			return &usageError{Err: fmt.Errorf("%s: key \"metrics\": %w", file, err)}
		}
		at, err := startMetrics(ctx, addr, set, log)
		if err != nil {
			return err
		}
		log.Info("metrics", "addr", at, "metrics", "/metrics", "mirrors", "/mirrors?ring=NAME", "health", "/healthz", "ready", "/readyz")
	}
	log.Info("running", "config", file, "units", ch.Started)
	for {
		select {
		case <-ctx.Done():
			sup.Wait()
			log.Info("stopped", "config", file)
			return nil
		case <-hup:
			c = reload(ctx, sup, settleConfig(log, file), file, c, log)
		}
	}
}

// logUnitEvent logs what the supervisor reports of a unit.
func logUnitEvent(log *slog.Logger, e supervisor.Event) {
	switch e.Kind {
	case supervisor.UnitEnded: // a mirror with once = true whose source left
		log.Info("unit ended", "unit", e.Table.Kind, "ring", e.Table.Name)
	case supervisor.UnitFailed:
		log.Error("unit failed, restarting", "unit", e.Table.Kind, "ring", e.Table.Name, "err", e.Err, "in", e.Backoff)
	}
}

// startLoops makes the Loops of c's loop keys, for b's units, and runs
// them; the returned function stops them once the units have stopped.
func startLoops(b *unitBuilder, c *supervisor.Config, log *slog.Logger) (stop func(), err error) {
	mode, _ := replica.ParseWaitMode(c.Loop) // checked by the parser
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	stop = func() {
		cancel()
		for _, d := range done {
			if err := <-d; err != nil {
				log.Error("loop", "err", err)
			}
		}
		for _, l := range b.loops {
			l.Close()
		}
	}
	for i := range c.Loops {
		pin := replica.Pin{On: c.LoopCPU >= 0, CPU: c.LoopCPU + i}
		l, err := replica.NewLoop(replica.LoopConfig{Wait: mode, Pin: pin})
		if err != nil {
			stop()
			return nil, &usageError{Err: fmt.Errorf("%s: key \"loop-cpu\": loop %d: %w", c.File, i, err)}
		}
		b.loops = append(b.loops, l)
		d := make(chan error, 1)
		done = append(done, d)
		go func() { d <- l.Run(ctx) }()
	}
	log.Info("loop", "wait", c.Loop, "loops", c.Loops, "cpu", c.LoopCPU)
	return stop, nil
}

// Reload waits for the file to have been unchanged for reloadQuiet, and
// at most reloadMaxWait: a file rewritten in place must not be read half
// written (a cut that still parses would stop the units it no longer
// names). A writer pausing longer than reloadQuiet is not covered: the
// guide says to write the file elsewhere and rename it into place.
const (
	reloadQuiet   = time.Second
	reloadMaxWait = 10 * time.Second
)

// settleConfig is how a reload waits for file to settle.
func settleConfig(log *slog.Logger, file string) *supervisor.Settle {
	return &supervisor.Settle{Quiet: reloadQuiet, Max: reloadMaxWait, Waiting: func(age time.Duration) {
		log.Info("reload: the file changed recently, waiting for it to settle", "config", file,
			"changed", age.Round(time.Millisecond), "quiet", reloadQuiet)
	}}
}

// reload rereads file once settle says it has stopped changing and
// applies it; a file that does not settle or parse, or whose tables are
// refused, leaves the running set as it was.
func reload(ctx context.Context, sup *supervisor.Supervisor, settle *supervisor.Settle, file string, old *supervisor.Config, log *slog.Logger) *supervisor.Config {
	var c *supervisor.Config
	err := settle.Read(ctx, file, func() (err error) {
		c, err = loadRunConfig(file)
		return err
	})
	if ctx.Err() != nil {
		return old // stopping
	}
	if err == nil && (c.Loop != old.Loop || c.LoopCPU != old.LoopCPU || c.Loops != old.Loops) {
		err = fmt.Errorf("%s: keys loop, loops and loop-cpu take effect at the next start (loop %q, loops %d, loop-cpu %d running)", file, old.Loop, old.Loops, old.LoopCPU)
	}
	if err == nil {
		var ch supervisor.Change
		if ch, err = sup.Apply(ctx, c); err == nil {
			if c.Metrics != old.Metrics || c.LogFormat != old.LogFormat {
				log.Warn("reload: metrics and log-format take effect at the next start", "config", file)
			}
			log.Info("reloaded", "config", file, "started", ch.Started, "stopped", ch.Stopped, "restarted", ch.Restarted, "unchanged", ch.Kept)
			return c
		}
	}
	log.Error("reload refused, the running set is kept", "config", file, "err", err)
	return old
}
