// Package cli is what the ringfire and xdpctl commands share: a table of
// subcommands with --help, usage errors that exit with status 2, and flag
// sets that mix flags with positional arguments and print GNU-style help.
package cli
