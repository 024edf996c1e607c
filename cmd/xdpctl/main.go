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

	"github.com/ringfire/ringfire/bpf"
)

// command is one subcommand: its name, a one-line summary for the top-level
// help, and the function that runs it with the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"probe", "report an interface's driver, queues, MTU and XDP/AF_XDP support", runProbe},
	{"attach", "load the steering program, attach it and pin it so it outlives xdpctl", runAttach},
	{"detach", "detach the pinned steering program and remove its pins", runDetach},
	{"status", "show attached programs, steered flows, sockets and fault settings", runStatus},
	{"stats", "print the steering program's counters, once or every interval", runStats},
	{"fault", "set (or show) the loss injected into steered packets, for tests", runFault},
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
	fmt.Fprintf(stderr, "xdpctl: %v\n", err)
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
	return usagef("unknown command %q (run 'xdpctl --help' for the list)", name)
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "usage: xdpctl COMMAND [IFACE] [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nEvery command takes --netns NAME (run in /run/netns/NAME) and --bpffs DIR.\n"+
		"Run 'xdpctl COMMAND --help' for a command's description and flags.\n")
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// common are the flags of every subcommand.
type common struct {
	netns string // --netns: the network namespace to work in
	bpffs string // --bpffs: where bpffs is (to be) mounted
}

// newFlagSet makes a subcommand's flag set with the common flags. Its
// help prints the synopsis, the description and the flags in GNU style.
func newFlagSet(name, synopsis, description string, stderr io.Writer, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: xdpctl %s %s\n\n%s\n", name, synopsis, description)
		printFlags(fs, stderr)
	}
	fs.StringVar(&c.netns, "netns", "", "work in network namespace `NAME` (/run/netns/NAME, or a path like /proc/PID/ns/net)")
	fs.StringVar(&c.bpffs, "bpffs", bpf.DefaultFS, "the bpffs mount `DIR` holding the pins")
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
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteByte('\n')
	})
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nflags:\n%s", b.String())
	}
}

// parseArgs parses flags mixed with at least min and at most len(names)
// positionals. A "--" ends the flags. It returns flag.ErrHelp after
// printing the help for --help, and a usage error for anything else wrong.
func parseArgs(fs *flag.FlagSet, args []string, min int, names ...string) ([]string, error) {
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
	case len(pos) < min:
		return nil, usagef("missing %s (run 'xdpctl %s --help')", names[len(pos)], fs.Name())
	case len(pos) > len(names):
		return nil, usagef("unexpected argument %q", pos[len(names)])
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
