package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ringfire/ringfire/shm"
)

const pruneHelp = `Prune maps the ring read-write and releases every reader registry entry
whose process is gone (kill(pid, 0) fails with ESRCH), so that a crashed
reader stops holding back the producer of a lossless ring and its entry can be
claimed again. It prints how many entries it reclaimed. Live readers are never
touched; a ring without a registry has nothing to prune.`

func runPrune(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("prune", "PATH", pruneHelp, stderr)
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	r, err := shm.Open(path, shm.OpenOptions{Writable: true})
	if err != nil {
		return err
	}
	defer r.Close()
	if r.Layout().RegistryCount == 0 {
		fmt.Fprintf(stdout, "%s: no reader registry, reclaimed 0 dead reader slots\n", path)
		return nil
	}
	n, err := r.Prune()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: reclaimed %d dead reader slot%s\n", path, n, plural(n))
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
