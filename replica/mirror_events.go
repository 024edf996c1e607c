package replica

import (
	"time"
)

// MirrorEventKind says what happened to a mirror's connection to its
// source.
type MirrorEventKind int

const (
	// MirrorConnected: a connection completed its handshake.
	MirrorConnected MirrorEventKind = iota
	// MirrorDisconnected: a connection ended. Err says why (nil: the
	// mirror was closed, or Run's context ended).
	MirrorDisconnected
	// MirrorConnectFailed: Run could not connect (the source is
	// unreachable, the handshake failed, the mirror ring is held by
	// another mirror, ...). Err says why; Backoff is the wait before the
	// next attempt (0: none, MirrorConfig.Once).
	MirrorConnectFailed
	// MirrorLineDown: line Line (of two, lines.go) delivered nothing for
	// LineDark while the other did; MirrorLineUp: it delivers again.
	MirrorLineDown
	MirrorLineUp
)

var mirrorEventNames = [...]string{"connected", "disconnected", "connect failed", "line down", "line up"}

func (k MirrorEventKind) String() string {
	return kindName(mirrorEventNames[:], int(k), "MirrorEventKind")
}

// MirrorEvent reports a change of a mirror's connection. The library never
// logs; MirrorConfig.Events receives these (the CLI logs them).
type MirrorEvent struct {
	Kind    MirrorEventKind
	Source  string // the source's address, MirrorConfig.Source
	Err     error
	Backoff time.Duration // for MirrorConnectFailed
	Line    string        // "A" or "B", for MirrorLineDown and MirrorLineUp
}

func (m *Mirror) emit(k MirrorEventKind, err error, backoff time.Duration) {
	if m.cfg.Events != nil {
		m.cfg.Events(MirrorEvent{Kind: k, Source: m.cfg.Source, Err: err, Backoff: backoff})
	}
}
