package replica

import (
	"context"
	"errors"
	"time"
)

// Run keeps the mirror up to date until ctx is done: it connects (and
// reconnects after Reconnect unless Once is set), steps, and blocks briefly
// when idle (busy-polls with Spin). It returns nil when ctx is done, or the
// error that ended a connection when Once is set.
func (m *Mirror) Run(ctx context.Context) error {
	defer m.publishStats(time.Now())
	idle := time.Millisecond
	if m.cfg.Spin {
		idle = 0
	}
	for ctx.Err() == nil {
		if m.c == nil {
			if err := m.Connect(ctx); err != nil {
				if m.cfg.Once || ctx.Err() != nil {
					m.connectFailed(ctx, err, 0)
					return ctxOr(ctx, err)
				}
				m.connectFailed(ctx, err, m.cfg.Reconnect)
				sleepCtx(ctx, m.cfg.Reconnect)
				continue
			}
		}
		_, err := m.step(idle)
		if err != nil {
			m.disconnect(err)
			if m.cfg.Once || ctx.Err() != nil {
				return ctxOr(ctx, err)
			}
			sleepCtx(ctx, m.cfg.Reconnect)
			continue
		}
	}
	return nil
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
