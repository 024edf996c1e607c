package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
)

// logEvery is how often a line a peer can cause at will (a refused
// connection, a rejected handshake, a connect) is logged per kind and
// reason: the others are counted, and the count goes with the next line
// of its kind (attribute suppressed).
const logEvery = time.Second

// maxThrottleKeys bounds the keys a throttle tracks: past it, the lines
// of a kind whose reason is new share one key (an attacker who varies the
// reason or the address still gets one line a second per kind).
const maxThrottleKeys = 256

// throttleKey marks a log line as one to throttle, with its reason: an
// error's root cause or a peer's address. It renders as an empty group,
// which handlers omit: a logger that does not throttle prints nothing of
// it.
type throttleKey string

func (throttleKey) LogValue() slog.Value { return slog.GroupValue() }

// throttled is the attribute that marks a line to throttle by reason.
func throttled(reason string) slog.Attr { return slog.Any("throttle", throttleKey(reason)) }

// rootCause is the text of the innermost error err wraps (a sentinel, an
// errno): what a key keeps of a reason, without the addresses and figures
// the wrapping adds.
func rootCause(err error) string {
	if err == nil {
		return ""
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
		err = u
	}
	return err.Error()
}

// peerHost is a peer's address without its port.
func peerHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// throttle decides which lines of each key are logged: the first, then at
// most one per interval, carrying the count of those suppressed since. It
// is safe for concurrent use.
type throttle struct {
	every time.Duration
	now   func() time.Time
	mu    sync.Mutex
	keys  map[string]*throttleState
}

// throttleState is a key's state.
type throttleState struct {
	last       time.Time // when its last line was logged
	suppressed int       // its lines not logged since
}

func newThrottle(every time.Duration, now func() time.Time) *throttle {
	return &throttle{every: every, now: now, keys: map[string]*throttleState{}}
}

// allow records a line of kind for reason. When the line is to be logged
// it returns true with the number of lines of its key suppressed since
// the previous one.
func (t *throttle) allow(kind, reason string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	key := kind + "\x00" + reason
	k := t.keys[key]
	if k == nil {
		if len(t.keys) >= maxThrottleKeys {
			t.prune(now)
		}
		if len(t.keys) >= maxThrottleKeys {
			key = kind + "\x00\x00" // the kind's shared key (no reason holds a NUL)
			k = t.keys[key]
		}
	}
	if k == nil {
		t.keys[key] = &throttleState{last: now}
		return 0, true
	}
	if now.Sub(k.last) < t.every {
		k.suppressed++
		return 0, false
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	return n, true
}

// prune forgets the keys whose next line would be logged anyway with
// nothing to carry: as if never seen.
func (t *throttle) prune(now time.Time) {
	for key, k := range t.keys {
		if k.suppressed == 0 && now.Sub(k.last) >= t.every {
			delete(t.keys, key)
		}
	}
}

// throttleHandler passes records to its inner handler, except that a
// record with a throttled attribute goes through a throttle keyed by the
// logger's own attributes (a unit's ring), the level, the message and the
// reason: the attribute is removed, and a record logged after others were
// suppressed gets suppressed=N.
type throttleHandler struct {
	inner  slog.Handler
	t      *throttle
	prefix string // the attributes and groups of With and WithGroup
}

func newThrottleHandler(inner slog.Handler, every time.Duration, now func() time.Time) *throttleHandler {
	return &throttleHandler{inner: inner, t: newThrottle(every, now)}
}

func (h *throttleHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *throttleHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(a.String())
		b.WriteByte(' ')
	}
	return &throttleHandler{inner: h.inner.WithAttrs(as), t: h.t, prefix: h.prefix + b.String()}
}

func (h *throttleHandler) WithGroup(name string) slog.Handler {
	return &throttleHandler{inner: h.inner.WithGroup(name), t: h.t, prefix: h.prefix + name + "."}
}

func (h *throttleHandler) Handle(ctx context.Context, r slog.Record) error {
	var reason throttleKey
	marked := false
	r.Attrs(func(a slog.Attr) bool {
		reason, marked = a.Value.Any().(throttleKey)
		return !marked
	})
	if !marked {
		return h.inner.Handle(ctx, r)
	}
	n, ok := h.t.allow(h.prefix+"\x00"+r.Level.String()+"\x00"+r.Message, string(reason))
	if !ok {
		return nil
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if _, mark := a.Value.Any().(throttleKey); !mark {
			out.AddAttrs(a)
		}
		return true
	})
	if n > 0 {
		out.AddAttrs(slog.Int("suppressed", n))
	}
	return h.inner.Handle(ctx, out)
}
