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

	"github.com/ringfire/ringfire/internal/cli"
	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
)

const runHelp = `Run serves and mirrors every ring of CONFIG, a TOML file, in one process:
one [[serve]] table per served ring and one [[mirror]] table per mirror,
whose keys are the long flags of serve and mirror. All of them share each
interface's XDP program and AF_XDP sockets (the kernel takes one program
per interface and one socket per queue, so one process per host carries
every ring over kernel bypass). SIGHUP rereads CONFIG: tables added start,
removed ones stop, changed ones restart alone, the others go on; a file
that no longer parses is refused with the error logged and the running set
kept. SIGTERM or SIGINT stop every unit cleanly (exit 0). The metrics key
serves /metrics (a ring label on every series), /mirrors?ring=NAME,
/healthz and /readyz (ready once every serve listens and every mirror has
connected once). --print-example prints a commented file.`

//go:embed run_example.toml
var runExample string

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	format := c.logFormat
	if *logFormat != "" {
		format = *logFormat
	}
	log, err := newLogger(format, stderr)
	if err != nil {
		return err
	}
	return serveRunConfig(ctx, file, c, log)
}

// loadRunConfig reads and parses CONFIG; its mistakes are usage errors.
func loadRunConfig(file string) (*runConfig, error) {
	data, err := readConfigFile(file)
	if err != nil {
		return nil, err
	}
	c, err := parseRunConfig(file, data)
	if err != nil {
		return nil, &usageError{Err: err}
	}
	if len(c.tables) == 0 {
		return nil, &usageError{Err: fmt.Errorf("%s: %w", file, errNoUnits)}
	}
	return c, nil
}

// serveRunConfig runs c's units until ctx ends, rereading file on SIGHUP.
func serveRunConfig(ctx context.Context, file string, c *runConfig, log *slog.Logger) error {
	// RINGFIRE_TRACE: the stamps of every unit, once all have stopped.
	defer trace.Flush("run-" + strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e := newEngine(log)
	if c.loop != "" {
		stopLoop, err := startLoops(e, c, log)
		if err != nil {
			return err
		}
		defer stopLoop() // after e.wait: the units have left it
	}
	defer e.wait() // after cancel: every unit stopped
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// apply builds every unit, its keys checked, before any starts: a bad
	// table is an error before the first socket opens.
	ch, err := e.apply(ctx, c)
	if err != nil {
		return &usageError{Err: err}
	}
	if c.metrics != "" {
		addr, err := metricsAddr(c.metrics)
		if err != nil {
			return &usageError{Err: fmt.Errorf("%s: key \"metrics\": %w", file, err)}
		}
		at, err := startMetrics(ctx, addr, &e.set, log)
		if err != nil {
			return err
		}
		log.Info("metrics", "addr", at, "metrics", "/metrics", "mirrors", "/mirrors?ring=NAME", "health", "/healthz", "ready", "/readyz")
	}
	log.Info("running", "config", file, "units", ch.started)
	for {
		select {
		case <-ctx.Done():
			e.wait()
			log.Info("stopped", "config", file)
			return nil
		case <-hup:
			c = reload(ctx, e, file, c, log)
		}
	}
}

// startLoops makes the Loops of c's loop keys and runs them for the units
// of e; the returned function stops them once the units have stopped.
func startLoops(e *engine, c *runConfig, log *slog.Logger) (stop func(), err error) {
	mode, _ := replica.ParseWaitMode(c.loop) // checked by the parser
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	stop = func() {
		cancel()
		for _, d := range done {
			if err := <-d; err != nil {
				log.Error("loop", "err", err)
			}
		}
		for _, l := range e.loops {
			l.Close()
		}
	}
	for i := range c.loops {
		pin := replica.Pin{On: c.loopCPU >= 0, CPU: c.loopCPU + i}
		l, err := replica.NewLoop(replica.LoopConfig{Wait: mode, Pin: pin})
		if err != nil {
			stop()
			return nil, &usageError{Err: fmt.Errorf("%s: key \"loop-cpu\": loop %d: %w", c.file, i, err)}
		}
		e.loops = append(e.loops, l)
		d := make(chan error, 1)
		done = append(done, d)
		go func() { d <- l.Run(ctx) }()
	}
	e.set.loops = e.loops
	log.Info("loop", "wait", c.loop, "loops", c.loops, "cpu", c.loopCPU)
	return stop, nil
}

// reload rereads file and applies it; a file that does not parse, or
// whose tables are refused, leaves the running set as it was.
func reload(ctx context.Context, e *engine, file string, old *runConfig, log *slog.Logger) *runConfig {
	c, err := loadRunConfig(file)
	if err == nil && (c.loop != old.loop || c.loopCPU != old.loopCPU || c.loops != old.loops) {
		err = fmt.Errorf("%s: keys loop, loops and loop-cpu take effect at the next start (loop %q, loops %d, loop-cpu %d running)", file, old.loop, old.loops, old.loopCPU)
	}
	if err == nil {
		var ch change
		if ch, err = e.apply(ctx, c); err == nil {
			if c.metrics != old.metrics || c.logFormat != old.logFormat {
				log.Warn("reload: metrics and log-format take effect at the next start", "config", file)
			}
			log.Info("reloaded", "config", file, "started", ch.started, "stopped", ch.stopped, "restarted", ch.restarted, "unchanged", ch.kept)
			return c
		}
	}
	log.Error("reload refused, the running set is kept", "config", file, "err", err)
	return old
}
