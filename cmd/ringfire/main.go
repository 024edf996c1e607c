// Command ringfire inspects, monitors, exercises and replicates ringfire
// shared-memory rings: stat, top, dump and prune look at a ring any producer
// wrote; gen and tail are a synthetic producer and a validating reader for
// tests and benchmarks; serve and mirror copy a ring to other hosts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one subcommand: its name, a one-line summary for the top-level
// help, and the function that runs it with the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"stat", "print a ring's geometry, counters and registered readers", runStat},
	{"top", "print throughput and the slowest reader's lag every interval", runTop},
	{"dump", "print the last records of a ring", runDump},
	{"prune", "release the registry entries of dead readers", runPrune},
	{"gen", "create a ring and write synthetic checksummed records", runGen},
	{"tail", "read and validate synthetic records", runTail},
	{"serve", "serve a ring to mirrors over TCP, UDP multicast or UDP unicast", runServe},
	{"mirror", "keep a local copy of a served ring, same sequence numbers", runMirror},
	{"mirrors", "print the mirrors of a serve --metrics ADDR: applied, lag, NAKs, gaps", runMirrors},
	{"bench", "measure every transport side by side in two namespaces (root)", runBench},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr and maps it to the exit status: 0 for
// success (or a help request), 2 for usage errors, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "ringfire: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// run dispatches args (without the program name) to a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stderr)
		return usagef("missing command")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 && name == "help" {
			return run(ctx, []string{rest[0], "--help"}, stdout, stderr)
		}
		printUsage(stderr)
		return nil
	}
	for _, c := range commands {
		if c.name == name {
			if err := c.run(ctx, rest, stdout, stderr); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
	}
	return usagef("unknown command %q (run 'ringfire --help' for the list)", name)
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "usage: ringfire COMMAND PATH [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'ringfire COMMAND --help' for a command's description and flags.\n")
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// newFlagSet makes a subcommand's flag set. Its help prints the synopsis,
// the one-paragraph description and the flags in GNU style.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ringfire %s %s\n\n%s\n", name, synopsis, description)
		printFlags(fs, stderr)
	}
	return fs
}

func printFlags(fs *flag.FlagSet, w io.Writer) {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if typ != "" {
			fmt.Fprintf(&b, " %s", typ)
		}
		fmt.Fprintf(&b, "\n    \t%s", usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteByte('\n')
	})
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nflags:\n%s", b.String())
	}
}

// parsePath parses a subcommand's arguments: exactly one PATH positional,
// with flags before and after it.
func parsePath(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseArgs(fs, args, "PATH")
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

// parseArgs parses flags mixed with exactly len(names) positionals (parse
// flags, take a positional, parse flags again). A "--" ends the flags. It
// returns flag.ErrHelp after printing the help for --help, and a usage
// error for anything else wrong.
func parseArgs(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err}
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < len(names):
		return nil, usagef("missing %s (run 'ringfire %s --help')", names[len(pos)], fs.Name())
	case len(pos) > len(names):
		return nil, usagef("unexpected argument %q after %s %q", pos[len(names)], names[len(names)-1], pos[len(names)-1])
	}
	return pos, nil
}

// helpOr turns the flag.ErrHelp of a --help request into success.
func helpOr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
