package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// mirrorUnit is one mirror: mirror runs one, ringfire run one per
// [[mirror]] table.
type mirrorUnit struct {
	name, source, path string
	from               string
	once               bool // --once: a cut ring ends the mirror too
	m                  *replica.Mirror
	log                *slog.Logger
}

// unit validates the flags and returns the mirror of source into path.
// published, when set, is told of every record the mirror makes visible
// (a hub: the server of path in the same process sends them on).
func (f *mirrorFlags) unit(source, path string, log *slog.Logger, published func(uint64)) (*mirrorUnit, error) {
	if err := checkSource(source); err != nil {
		return nil, err
	}
	start, err := parseMirrorFrom(f.from)
	if err != nil {
		return nil, err
	}
	ifa, err := ifaceAddr(f.iface)
	if err != nil {
		return nil, err
	}
	mode, pin, err := f.wait.check()
	if err != nil {
		return nil, err
	}
	key, err := f.key.load()
	if err != nil {
		return nil, err
	}
	if f.reconnectMS <= 0 {
		return nil, usagef("--reconnect-ms must be positive")
	}
	tc, err := f.xdp.check()
	if err != nil {
		return nil, err
	}
	if _, ok := replica.UnixSocket(source); ok {
		switch {
		case f.unicast:
			return nil, usagef("--unicast: the Unix socket %s carries no datagrams", source)
		case f.xdp.bypass():
			return nil, usagef("--xdp/--transport: the Unix socket %s carries no datagrams", source)
		}
	}
	f.xdp.busyPollFor(&tc, mode)
	xo := newOpener(tc, &f.xdp, log)
	mcfg := replica.MirrorConfig{Source: source, Ring: path, From: start, Unicast: f.unicast,
		TCPOnly: f.tcp, Iface: ifa, Once: f.once, Wait: mode, Pin: pin, Reconnect: time.Duration(f.reconnectMS) * time.Millisecond,
		NewTransport: xo.mirrorTransport(), NoTelemetry: f.noTelemetry, NoSession64: f.noTelemetry, NoHistory: f.noTelemetry || f.noHistory, Events: mirrorEvents(log, time.Now),
		MaxRingSize: f.maxSize.opt(), SourceTimeout: f.sourceTimeout.opt(), AnySource: f.anySource, Key: key, Encrypt: f.key.encrypt, Published: published, Loop: f.loop}
	if err := f.lines.mirror(&mcfg, &f.xdp, log); err != nil {
		return nil, err
	}
	m, err := replica.NewMirror(mcfg)
	if err != nil {
		return nil, err
	}
	return &mirrorUnit{name: ringName(path), source: source, path: path, from: f.from, once: f.once, m: m, log: log}, nil
}

// run mirrors until ctx ends (or the source goes away, with --once), then
// closes the mirror.
//
// A mirror ring cut under its mapping (truncated by another process) ends
// the session with one error naming the file; unless --once, the mirror
// then connects again and starts a fresh ring at the path.
func (u *mirrorUnit) run(ctx context.Context) error {
	u.log.Info("mirroring", "source", u.source, "ring", u.path, "from", u.from)
	err := u.m.Run(ctx)
	for errors.Is(err, shm.ErrTruncated) && !u.once && ctx.Err() == nil {
		u.log.Error("mirror ring cut under its mapping: starting a fresh ring at the next connection", "ring", u.path, "err", err)
		err = u.m.Run(ctx)
	}
	if cerr := u.m.Close(); err == nil {
		err = cerr
	}
	return err
}

// ready is nil once the mirror has connected to its source once, else
// why not.
func (u *mirrorUnit) ready() error {
	if u.m.Stats().Connects == 0 {
		return errors.New("not connected to " + u.source + " yet")
	}
	return nil
}
