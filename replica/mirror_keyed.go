package replica

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// secure wraps a mirror's connection in TLS with the shared key, when it
// has one. A source that refuses says why in an ERROR frame, which the
// TLS client would only call garbage: the bytes it read are kept to find
// it.
func (m *Mirror) secure(ctx context.Context, c net.Conn) (net.Conn, error) {
	if m.cfg.Key == nil {
		return c, nil
	}
	rc := &recordConn{Conn: c}
	tc := tls.Client(rc, m.cfg.Key.ClientTLS())
	if err := tc.HandshakeContext(ctx); err != nil {
		if msg, ok := rc.errorFrame(); ok {
			return nil, fmt.Errorf("%w: %s", ErrRefused, msg)
		}
		if errors.Is(err, auth.ErrWrongKey) {
			return nil, fmt.Errorf("%w: TLS: %w", ErrKeyRequired, err)
		}
		return nil, fmt.Errorf("%w: TLS handshake: %w (does the source run with the same --key?)", ErrKeyRequired, err)
	}
	rc.rec, rc.done = nil, true
	return tc, nil
}

// refusal turns the payload of an ERROR frame read where the handshake
// expected GEOMETRY or SESSION into the source's reason.
func refusal(p []byte) error {
	msg, err := wire.ParseError(p)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", ErrRefused, msg)
}

// readSession reads the source's SESSION: without a key, the wide
// session (the id its datagrams end with, if they do); with one, the
// incarnation, from which it makes the connection's datagram opener and
// PUNCH sealer.
func (m *Mirror) readSession(c *conn) (wire.Session, error) {
	h, p, err := c.readFrame(max(wire.SessionSize, wire.MaxErrorLen))
	if err != nil {
		return wire.Session{}, err
	}
	if h.Kind == wire.KindError {
		return wire.Session{}, refusal(p)
	}
	if h.Kind != wire.KindSession {
		return wire.Session{}, fmt.Errorf("%w: expected SESSION, got %v", wire.ErrMalformed, h.Kind)
	}
	s, err := wire.ParseSession(h, p)
	if err != nil {
		return s, err
	}
	if m.cfg.Key == nil {
		c.trailer, c.sid = s.Trailer, s.ID
		return s, nil
	}
	if m.cfg.Encrypt && !s.Encrypt {
		return s, fmt.Errorf("%w: the source does not encrypt its datagrams (serve --encrypt), and this mirror requires it", ErrRefused)
	}
	_, open, err := m.cfg.Key.Datagrams(s.Incarnation[:], s.Encrypt)
	if err != nil {
		return s, err
	}
	c.open = open()
	km, err := punchKey(c.tcp)
	if err != nil {
		return s, err
	}
	if c.punchSeal, _, err = auth.NewPair(km, false); err != nil {
		return s, err
	}
	return s, nil
}

// openDatagram checks a keyed datagram, or the wide session's trailer,
// and returns its frame; false: it failed (counted).
func (m *Mirror) openDatagram(c *conn, b []byte) ([]byte, bool) {
	if c.trailer {
		n := len(b) - wire.TrailerSize
		if n < wire.HeaderSize || binary.LittleEndian.Uint64(b[n:]) != c.sid {
			m.stats.OtherSession++ // another (or a forged) session
			return nil, false
		}
		return b[:n], true
	}
	if c.open == nil {
		return b, true
	}
	f, err := c.open.Open(b)
	switch {
	case err == nil:
		return f, true
	case errors.Is(err, auth.ErrReplay) && c.hasLineB:
		m.stats.Duplicates++ // the other line's copy, most likely (lines.go)
	case errors.Is(err, auth.ErrReplay):
		m.stats.Replayed++
	default:
		m.stats.BadAuth++
	}
	return nil, false
}

// recordConn keeps the first bytes read from a connection (up to one
// ERROR frame) until the handshake is done.
type recordConn struct {
	net.Conn
	rec  []byte
	done bool // the handshake is over: nothing more is recorded
}

func (r *recordConn) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	if room := wire.HeaderSize + wire.MaxErrorLen - len(r.rec); !r.done && room > 0 && n > 0 {
		r.rec = append(r.rec, b[:min(n, room)]...)
	}
	return n, err
}

// errorFrame parses the recorded bytes as an ERROR frame.
func (r *recordConn) errorFrame() (string, bool) {
	h, p, err := readFrameFrom(bufio.NewReader(bytes.NewReader(r.rec)), wire.MaxErrorLen)
	if err != nil || h.Kind != wire.KindError {
		return "", false
	}
	msg, err := wire.ParseError(p)
	return msg, err == nil
}
