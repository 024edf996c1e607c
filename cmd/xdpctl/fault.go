package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/ringfire/ringfire/bpf"
)

func runFault(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c     common
		every uint
		ratio float64
		off   bool
	)
	fs := newFlagSet("fault", "IFACE --drop-every N | --drop-ratio R | --off",
		"Set the loss the pinned steering program of IFACE injects into steered\n"+
			"packets (for tests): drop every Nth (one sequence over all CPUs, restarted\n"+
			"by every change), or a random fraction R, or nothing. Without a flag, show\n"+
			"the setting.", stderr, &c)
	fs.UintVar(&every, "drop-every", 0, "drop every `N`th steered packet (N ≥ 1)")
	fs.Float64Var(&ratio, "drop-ratio", 0, "drop this random fraction `R` of steered packets (0 < R ≤ 1)")
	fs.BoolVar(&off, "off", false, "inject no loss")
	pos, err := parseArgs(fs, args, 1, "IFACE")
	if err != nil {
		return helpOr(err)
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "drop-every", "drop-ratio", "off":
			set = append(set, "--"+f.Name)
		}
	})
	var ft bpf.Fault
	switch {
	case len(set) > 1:
		return usagef("%s and %s: give one of --drop-every, --drop-ratio, --off", set[0], set[1])
	case len(set) == 0:
	case off:
	case set[0] == "--off":
		return usagef("--off=false: give --drop-every or --drop-ratio instead")
	case set[0] == "--drop-every":
		if every < 1 || every > 1<<32-1 {
			return usagef("--drop-every %d: want 1..4294967295 (--off for none)", every)
		}
		ft.DropEvery = uint32(every)
	default:
		if !(ratio > 0 && ratio <= 1) {
			return usagef("--drop-ratio %v: want 0 < R ≤ 1 (--off for none)", ratio)
		}
		ft.DropRatio = ratio
	}
	return c.do(func() error {
		p, err := bpf.OpenPinned(c.bpffs, pos[0])
		if err != nil {
			return openHint(err, pos[0], &c)
		}
		defer p.Close()
		if len(set) > 0 {
			if err := p.SetFault(ft); err != nil {
				return permHint(err)
			}
		}
		got, err := p.Fault()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: fault %s\n", pos[0], faultString(got))
		return nil
	})
}
