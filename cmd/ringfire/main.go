// Command ringfire inspects, monitors, exercises and replicates ringfire
// shared-memory rings: stat, top, dump and prune look at a ring any producer
// wrote, and clean removes the rings no process uses any more; gen and tail
// are a synthetic producer and a validating reader for tests and
// benchmarks; serve and mirror copy a ring to other hosts; record keeps
// every record of a ring in an archive on disk, replay writes it back into
// a ring and archive looks at one; and run serves, mirrors and records
// every ring of a TOML file in one process. The
// benchmark harness is a command of its own, ringfire-bench.
package main

import (
	"context"
	"flag"
	"io"

	"github.com/ringfire/ringfire/internal/cli"
	"github.com/ringfire/ringfire/internal/trace"
)

// commands are ringfire's subcommands.
var commands = []cli.Command{
	{Name: "stat", Summary: "print a ring's geometry, counters and registered readers", Run: runStat},
	{Name: "top", Summary: "print throughput and the slowest reader's lag every interval", Run: runTop},
	{Name: "dump", Summary: "print the last records of a ring", Run: runDump},
	{Name: "prune", Summary: "release the registry entries of dead readers", Run: runPrune},
	{Name: "clean", Summary: "remove the ring files no process writes, reads or maps (--dry-run lists them)", Run: runClean},
	{Name: "gen", Summary: "create a ring and write synthetic checksummed records", Run: runGen},
	{Name: "tail", Summary: "read and validate synthetic records", Run: runTail},
	{Name: "serve", Summary: "serve a ring to mirrors over TCP, UDP multicast or UDP unicast", Run: runServe},
	{Name: "mirror", Summary: "keep a local copy of a served ring, same sequence numbers", Run: runMirror},
	{Name: "record", Summary: "append every record of a ring to an archive on disk (segments, index, CRCs)", Run: runRecord},
	{Name: "replay", Summary: "write an archive's records into a ring at their original sequences", Run: runReplay},
	{Name: "archive", Summary: "print an archive's epochs and segments (stat), check it (verify), print entries (dump)", Run: runArchive},
	{Name: "run", Summary: "serve, mirror and record every ring of a TOML file in one process (SIGHUP reloads)", Run: runSupervise},
	{Name: "mirrors", Summary: "print the mirrors of a serve --metrics ADDR: applied, lag, NAKs, gaps", Run: runMirrors},
	{Name: "keygen", Summary: "write a fresh secret for serve --key and mirror --key", Run: runKeygen},
}

var program = &cli.Program{Name: "ringfire", Synopsis: "COMMAND PATH [flags]",
	Footer: "\nRun 'ringfire COMMAND --help' for a command's description and flags.\n"}

func init() { program.Commands = commands }

func main() {
	trace.Start() // RINGFIRE_TRACE=DIR: serve and mirror stamp records for ringfire-bench
	program.Main()
}

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

// newFlagSet makes a subcommand's flag set. Its help prints the synopsis,
// the one-paragraph description and the flags in GNU style.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlagSet("ringfire", name, synopsis, description, stderr)
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

// parseArgs parses flags mixed with exactly len(names) positionals.
func parseArgs(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	return cli.ParseArgs("ringfire", fs, args, len(names), names...)
}

// helpOr turns the flag.ErrHelp of a --help request into success.
func helpOr(err error) error { return cli.HelpOr(err) }
