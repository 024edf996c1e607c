package replica

import (
	"context"
	"errors"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/shm"
)

// Run keeps the mirror up to date until ctx is done: it connects (and
// reconnects after Reconnect unless Once is set) and steps, on a locked
// OS thread, waiting when idle as MirrorConfig.Wait says (mirror_wait.go).
// It returns nil when ctx is done, or the error that ended a connection
// when Once is set; a fault on the mirror ring (its file cut under it by
// another process) ends Run with that error (guardRun, mirror_ring.go),
// and the next Run starts a fresh ring.
//
// When ctx ends, the step under way finishes: every record applied is
// published in the mirror ring (each step publishes what it stored, even
// one that fails), and Stats, refreshed as Run returns, are final. The
// connection stays open until Close. A source that stops gracefully
// closes its end only once the mirror has what it was owed; Run then
// reconnects (or, with Once, returns nil).
func (m *Mirror) Run(ctx context.Context) (err error) {
	defer m.guardRun(guard(), &err) // its ring cut under it: this session ends
	// Stats as Run returns (a deferred publishStats(time.Now()) would
	// take its time at the call).
	defer func() { m.publishStats(time.Now()) }()
	if m.cfg.Loop == nil {
		if unlock, err := idle.LockThread(m.cfg.Pin.cpu()); err == nil { // NewMirror checked the CPU
			defer unlock()
		}
	}
	defer context.AfterFunc(ctx, m.waker.Notify)()
	for ctx.Err() == nil {
		if m.c == nil {
			if err := m.Connect(ctx); err != nil {
				if m.cfg.Once || ctx.Err() != nil {
					m.connectFailed(ctx, err, 0)
					return ctxOr(ctx, err)
				}
				m.connectFailed(ctx, err, m.cfg.Reconnect)
				idle.Sleep(ctx, m.cfg.Reconnect)
				continue
			}
		}
		if err := m.round(ctx, m.c); err != nil {
			m.disconnect(err)
			if errors.Is(err, shm.ErrTruncated) { // a Loop member's ring was cut: as guardRun
				return err
			}
			if m.cfg.Once || ctx.Err() != nil {
				return ctxOr(ctx, err)
			}
			idle.Sleep(ctx, m.cfg.Reconnect)
			continue
		}
	}
	return nil
}

// round steps connection c: on the mirror's Loop until it fails or ctx
// ends, or one idleRound of Run's own loop (no Loop, or a transport that
// is not Pollable, whose steps wait in RecvBatch).
func (m *Mirror) round(ctx context.Context, c *conn) error {
	if m.cfg.Loop != nil && m.pollable {
		return m.runInLoop(ctx, c)
	}
	return m.idleRound(c)
}

// connectFailed reports a failed attempt to connect, unless it failed
// because ctx ended.
func (m *Mirror) connectFailed(ctx context.Context, err error, backoff time.Duration) {
	if ctx.Err() == nil {
		m.emit(MirrorConnectFailed, err, backoff)
	}
}

// ctxOr is the error Run returns: none once ctx is done, and none when the
// source closed the connection cleanly (a source that shuts down).
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, ErrPeerClosed) {
		return nil
	}
	return err
}
