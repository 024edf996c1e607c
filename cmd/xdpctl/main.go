package main

import (
	"context"
	"flag"
	"io"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/cli"
)

// commands are xdpctl's subcommands.
var commands = []cli.Command{
	{Name: "probe", Summary: "report an interface's driver, queues, MTU and XDP/AF_XDP support", Run: runProbe},
	{Name: "attach", Summary: "load the steering program, attach it and pin it so it outlives xdpctl", Run: runAttach},
	{Name: "detach", Summary: "detach the pinned steering program and remove its pins", Run: runDetach},
	{Name: "status", Summary: "show attached programs, steered flows, sockets and fault settings", Run: runStatus},
	{Name: "stats", Summary: "print the steering program's counters, once or every interval", Run: runStats},
	{Name: "fault", Summary: "set (or show) the loss injected into steered packets, for tests", Run: runFault},
}

var program = &cli.Program{Name: "xdpctl", Synopsis: "COMMAND [IFACE] [flags]",
	Footer: "\nEvery command takes --netns NAME (run in /run/netns/NAME) and --bpffs DIR.\n" +
		"Run 'xdpctl COMMAND --help' for a command's description and flags.\n"}

func init() { program.Commands = commands }

func main() { program.Main() }

// exitCode reports err on stderr and maps it to the exit status: 0 for
// success (or a help request), 2 for usage errors, 1 otherwise.
func exitCode(err error, stderr io.Writer) int { return program.ExitCode(err, stderr) }

// run dispatches args (without the program name) to a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return program.Run(ctx, args, stdout, stderr)
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError = cli.UsageError

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// common are the flags of every subcommand.
type common struct {
	netns string // --netns: the network namespace to work in
	bpffs string // --bpffs: where bpffs is (to be) mounted
}

// newFlagSet makes a subcommand's flag set with the common flags. Its
// help prints the synopsis, the description and the flags in GNU style.
func newFlagSet(name, synopsis, description string, stderr io.Writer, c *common) *flag.FlagSet {
	fs := cli.NewFlagSet("xdpctl", name, synopsis, description, stderr)
	fs.StringVar(&c.netns, "netns", "", "work in network namespace `NAME` (/run/netns/NAME, or a path like /proc/PID/ns/net)")
	fs.StringVar(&c.bpffs, "bpffs", bpf.DefaultFS, "the bpffs mount `DIR` holding the pins")
	return fs
}

// parseArgs parses flags mixed with at least min and at most len(names)
// positionals.
func parseArgs(fs *flag.FlagSet, args []string, min int, names ...string) ([]string, error) {
	return cli.ParseArgs("xdpctl", fs, args, min, names...)
}

// helpOr turns the flag.ErrHelp of a --help request into success.
func helpOr(err error) error { return cli.HelpOr(err) }
