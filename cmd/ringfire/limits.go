package main

import (
	"flag"

	"github.com/ringfire/ringfire/replica"
)

// limitFlags are serve's connection limits.
type limitFlags struct {
	conns, perAddr, pending int
}

func (l *limitFlags) add(fs *flag.FlagSet) {
	fs.IntVar(&l.conns, "max-conns", replica.DefaultMaxConns, "at most `N` TCP connections at once (-1: no limit)")
	fs.IntVar(&l.perAddr, "max-conns-per-addr", replica.DefaultMaxConnsPerAddr, "at most `N` TCP connections from one address (-1: no limit)")
	fs.IntVar(&l.pending, "max-pending", replica.DefaultMaxPending, "at most `N` connections in their handshake or catch-up; when full, the oldest is evicted for a newcomer (-1: no limit)")
}

// apply checks the limits and sets them in cfg.
func (l *limitFlags) apply(cfg *replica.ServerConfig) error {
	for _, v := range []struct {
		name string
		n    int
	}{{"--max-conns", l.conns}, {"--max-conns-per-addr", l.perAddr}, {"--max-pending", l.pending}} {
		if v.n < 1 && v.n != -1 {
			return usagef("%s %d: want at least 1, or -1 for no limit", v.name, v.n)
		}
	}
	cfg.MaxConns, cfg.MaxConnsPerAddr, cfg.MaxPending = l.conns, l.perAddr, l.pending
	return nil
}
