package cli

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

// Command is one subcommand: its name, a one-line summary for the
// top-level help, and the function that runs it with the arguments after
// its name.
type Command struct {
	Name    string
	Summary string
	Run     RunFunc
}

// Program is a command with subcommands.
type Program struct {
	Name     string
	Synopsis string // after the name in the top-level usage line
	Footer   string // printed after the list of commands
	Commands []Command
}

// RunFunc runs a command with its arguments (after its name).
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Main runs the program with the process's arguments, stopping it on
// SIGINT or SIGTERM, and exits with ExitCode's status.
func (p *Program) Main() { Main(p.Name, p.Run) }

// Main runs a command without subcommands, named name, as Program.Main
// runs a program with them.
func Main(name string, run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(ExitCode(name, err, os.Stderr))
}

// Run dispatches args (without the program name) to a subcommand.
func (p *Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		p.PrintUsage(stderr)
		return Usagef("missing command")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 && name == "help" {
			return p.Run(ctx, []string{rest[0], "--help"}, stdout, stderr)
		}
		p.PrintUsage(stderr)
		return nil
	}
	for _, c := range p.Commands {
		if c.Name == name {
			if err := c.Run(ctx, rest, stdout, stderr); err != nil {
				if strings.HasPrefix(err.Error(), name+": ") {
					return err // "mirror: connect ...", not "mirror: mirror: connect ..."
				}
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
	}
	return Usagef("unknown command %q (run '%s --help' for the list)", name, p.Name)
}

// PrintUsage prints the top-level help.
func (p *Program) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s\n\ncommands:\n", p.Name, p.Synopsis)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %-7s %s\n", c.Name, c.Summary)
	}
	fmt.Fprint(w, p.Footer)
}

// ExitCode reports err on stderr and maps it to the exit status: 0 for
// success (or a help request), 2 for usage errors, 1 otherwise.
func (p *Program) ExitCode(err error, stderr io.Writer) int { return ExitCode(p.Name, err, stderr) }

// ExitCode is Program.ExitCode for the command name.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var ue *UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// UsageError is a mistake in the command line; it exits with status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// NewFlagSet makes the flag set of program prog's subcommand name (""
// for a command without subcommands). Its help prints the synopsis, the
// description and the flags in GNU style.
func NewFlagSet(prog, name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cmd := strings.TrimSpace(prog + " " + name)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s %s\n\n%s\n", cmd, synopsis, description)
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
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteByte('\n')
	})
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nflags:\n%s", b.String())
	}
}

// ParseArgs parses flags mixed with at least min and at most len(names)
// positionals (parse flags, take a positional, parse flags again). A "--"
// ends the flags. It returns flag.ErrHelp after printing the help for
// --help, and a UsageError for anything else wrong; prog names the program
// in the hint.
func ParseArgs(prog string, fs *flag.FlagSet, args []string, min int, names ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &UsageError{err}
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
		return nil, Usagef("missing %s (run '%s %s --help')", names[len(pos)], prog, fs.Name())
	case len(pos) > len(names) && len(names) > 0:
		return nil, Usagef("unexpected argument %q after %s %q", pos[len(names)], names[len(names)-1], pos[len(names)-1])
	case len(pos) > len(names):
		return nil, Usagef("unexpected argument %q", pos[0])
	}
	return pos, nil
}

// HelpOr turns the flag.ErrHelp of a --help request into success.
func HelpOr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
