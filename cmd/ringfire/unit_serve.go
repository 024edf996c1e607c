package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// serveUnit is one served ring: serve runs one, ringfire run one per
// [[serve]] table. Its run serves until ctx ends, and serves the new ring
// under a new session when the producer replaces the ring.
type serveUnit struct {
	name string // the ring's name in logs, metrics and /mirrors
	path string
	cfg  replica.ServerConfig
	log  *slog.Logger
	live *liveServer // the server running now; shared with a hub's mirror
	// await makes run wait for a ring that does not exist yet (a hub's
	// mirror in the same process creates it once it reached its source).
	await bool
	// cuts counts the served rings whose file was cut under their
	// mapping (each ended a server; Server's own counters start again).
	cuts atomic.Uint64
	// archive is --archive's reader (nil: none): mirrors asking for what
	// the ring lost are served from it.
	archive *archive.Reader
}

// unit validates the flags and returns the unit serving path.
func (f *serveFlags) unit(path string, log *slog.Logger) (*serveUnit, error) {
	cfg, err := f.config(path, log)
	if err != nil {
		return nil, err
	}
	tc, err := f.xdp.check()
	if err != nil {
		return nil, err
	}
	f.xdp.busyPollFor(&tc, cfg.Wait)
	if f.xdp.bypass() && f.udp == 0 && !cfg.Multicast.IsValid() {
		return nil, usagef("--xdp/--transport carries datagrams: it needs --multicast or --udp")
	}
	cfg.NewTransport = newOpener(tc, &f.xdp, log).serverTransport()
	if err := f.lines.serve(&cfg, &f.xdp, log); err != nil {
		return nil, err
	}
	ar, err := openArchive(f.archive)
	if err != nil {
		return nil, err
	}
	return &serveUnit{name: ringName(path), path: path, cfg: cfg, log: log, live: new(liveServer), archive: ar}, nil
}

// run serves until ctx ends. started is called with each server once it
// listens (and a context that ends with it), stopped with its final
// counters.
func (u *serveUnit) run(ctx context.Context, started func(context.Context, *replica.Server), stopped func(replica.ServerStats)) error {
	cut := false // the last ring was cut under us: wait for a valid one
	for restarted := false; ; restarted = true {
		srv, err := u.open(ctx, restarted || u.await, cut)
		if err != nil || srv == nil {
			return err
		}
		u.log.Info("serving", "ring", u.path, "bind", srv.Addr(), "unix", srv.UnixAddr(), "multicast", u.cfg.Multicast, "multicast_b", u.cfg.MulticastB, "udp", u.cfg.UDPPort, "session", srv.Session())
		sctx, stop := context.WithCancel(ctx)
		if started != nil {
			started(sctx, srv)
		}
		u.live.p.Store(srv)
		err = srv.Serve(sctx)
		u.live.p.Store(nil)
		stop()
		st := stats(srv)
		srv.Close()
		if stopped != nil {
			stopped(st)
		}
		cut = errors.Is(err, replica.ErrRingTruncated)
		if cut {
			u.cuts.Add(1)
			// The file was cut under us: one error naming it, then wait
			// for a valid ring at the path (a restarted producer).
			u.log.Error("ring file cut under its mapping: waiting for a valid ring at the path", "ring", u.path, "err", err)
			continue
		}
		if !errors.Is(err, replica.ErrRingReplaced) {
			return err
		}
		// The producer restarted: serve the new ring under a new session,
		// so that mirrors start fresh rings.
		u.log.Warn("ring replaced, serving the new one", "ring", u.path)
	}
}

// stats is srv.Stats, which reads the ring's write_seq, guarded: a ring
// cut under its mapping reads 0 there instead of killing the process.
func stats(srv *replica.Server) (st replica.ServerStats) {
	shm.Protect(func() error { st = srv.Stats(); return nil })
	return st
}

// ready is nil once the unit listens, else why not.
func (u *serveUnit) ready() error {
	if u.live.p.Load() == nil {
		return errors.New("not listening yet")
	}
	return nil
}

// open opens the server. With wait, a ring that does not exist yet (or is
// still being created) is waited for: after a replaced ring for 5 s, the
// new producer finishing it; for a hub's ring until ctx ends. After a ring
// cut under its mapping (cut), the cut file (ErrTruncated) is waited for
// too, until ctx ends: its producer died with it, and a new one creates a
// new ring there. It returns nil, nil when ctx ends first.
func (u *serveUnit) open(ctx context.Context, wait, cut bool) (*replica.Server, error) {
	deadline := time.Now().Add(5 * time.Second)
	logged := false
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		var srv *replica.Server
		err := shm.Protect(func() (err error) { srv, err = u.newServer(); return err }) // cut as it opens
		transient := errors.Is(err, os.ErrNotExist) || errors.Is(err, shm.ErrMagic) || errors.Is(err, errRingMoved) ||
			cut && errors.Is(err, shm.ErrTruncated)
		switch {
		case err == nil:
			return srv, nil
		case !wait || !transient:
			return nil, err
		case !u.await && !cut && time.Now().After(deadline):
			return nil, err
		case u.await && !logged:
			u.log.Info("waiting for the ring to be created", "ring", u.path)
			logged = true
		}
		t.Reset(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-t.C:
		}
	}
}
