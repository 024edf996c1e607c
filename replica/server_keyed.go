package replica

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// Errors of keyed replication.
var (
	// ErrKeyRequired: a keyed source refused a peer without the key (or
	// a mirror with a key met a source without one).
	ErrKeyRequired = errors.New("replica: the peer does not use the key")
	// ErrRefused: the source refused the connection; its ERROR frame says
	// why.
	ErrRefused = errors.New("replica: the source refused the connection")
)

// tlsRecord is the first byte of a TLS handshake record.
const tlsRecord = 0x16

// keyed is a source's keyed state (ServerConfig.Key): the key and the
// sealer of the datagrams, keyed by the source's incarnation. sealer is
// used only in sender rounds (under Server.sendMu).
type keyed struct {
	key    *auth.Key
	sealer *auth.Sealer
}

func newKeyed(k *auth.Key, sess wire.Session) (*keyed, error) {
	s, _, err := k.Datagrams(sess.Incarnation[:], sess.Encrypt)
	if err != nil {
		return nil, err
	}
	return &keyed{key: k, sealer: s}, nil
}

// newIncarnation draws a source incarnation: 32 random bytes, whose first
// 8 are the 64-bit session id (SESSION) and whose first byte is the
// version-1 session byte.
func newIncarnation(encrypt bool) wire.Session {
	s := wire.Session{Encrypt: encrypt}
	copy(s.Incarnation[:], auth.NewIncarnation())
	s.ID = binary.LittleEndian.Uint64(s.Incarnation[:])
	return s
}

// secure reads the peer's first byte and returns the connection the
// session speaks over: TLS with the shared key for a keyed source, pc
// itself otherwise. A peer that does not match (plain HELLO to a keyed
// source, a TLS handshake to a plain one) is told why in an ERROR frame
// and refused. The deadline admit set bounds it.
func (s *Server) secure(ctx context.Context, pc *prefixConn) (net.Conn, error) {
	first := make([]byte, 1)
	if _, err := io.ReadFull(pc.Conn, first); err != nil {
		return nil, eofErr(err)
	}
	pc.prefix = first
	switch keyedPeer := first[0] == tlsRecord; {
	case s.keyed == nil && !keyedPeer:
		return pc, nil
	case s.keyed == nil:
		pc.Write(wire.AppendError(nil, "this source has no key: run the mirror without --key"))
		return nil, fmt.Errorf("%w: a TLS handshake to a source without a key", ErrKeyRequired)
	case !keyedPeer:
		pc.Write(wire.AppendError(nil, "this source requires its key: run the mirror with --key"))
		return nil, fmt.Errorf("%w: a plain HELLO to a keyed source", ErrKeyRequired)
	}
	tc := tls.Server(tlsConn{pc}, s.keyed.key.ServerTLS())
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("%w: TLS: %w", ErrKeyRequired, err)
	}
	return tc, nil
}

// punchKey is the PUNCH key of a keyed session, from the TLS exporter
// (both ends compute it).
func punchKey(c net.Conn) ([]byte, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil, nil
	}
	st := tc.ConnectionState()
	return st.ExportKeyingMaterial("ringfire punch", nil, 32)
}

// prefixConn is a connection whose first bytes were already read; wrote
// says whether TLS wrote to it (tlsConn; the handshake's goroutine's).
type prefixConn struct {
	net.Conn
	prefix []byte
	wrote  bool
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// tlsConn is the connection under a source's TLS: it marks what TLS
// wrote, after which the peer could no longer read a plain ERROR frame.
type tlsConn struct{ *prefixConn }

func (t tlsConn) Write(b []byte) (int, error) {
	t.wrote = true
	return t.Conn.Write(b)
}

// overhead is what the datagrams of a round carry beyond the frame: the
// seal with a key; the wide session's trailer when some destination
// takes it (wide); nothing otherwise.
func (s *Server) overhead(wide bool) int {
	switch {
	case s.keyed != nil:
		return auth.Overhead
	case wide:
		return wire.TrailerSize
	}
	return 0
}

// seal seals a datagram of the sender (a sender round) when keyed, or
// appends the wide session's trailer when some destination takes it
// (version-1 destinations are sent the frame without it: appendDests).
func (s *Server) seal(b []byte, wide bool) []byte {
	switch {
	case s.keyed != nil:
		return s.keyed.sealer.Seal(b)
	case wide:
		return binary.LittleEndian.AppendUint64(b, s.sess.ID)
	}
	return b
}

// keyPunch makes the PUNCH opener of a keyed session.
func (ss *session) keyPunch() error {
	km, err := punchKey(ss.tcp)
	if err != nil || km == nil {
		return err
	}
	_, open, err := auth.NewPair(km, false)
	if err != nil {
		return err
	}
	ss.punchOpen = open()
	return nil
}
