package auth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// Errors of the package.
var (
	ErrKeyFile  = errors.New("auth: bad key file")
	ErrWrongKey = errors.New("auth: the peer holds another key")
	ErrTag      = errors.New("auth: datagram failed authentication")
	ErrReplay   = errors.New("auth: datagram replayed")
	ErrShort    = errors.New("auth: datagram too short for its trailer")
)

// MinSecret is the shortest secret accepted, in bytes.
const MinSecret = 32

// Key is a shared secret and what both ends derive from it.
type Key struct {
	secret []byte
	pub    ed25519.PublicKey
	cert   tls.Certificate
}

// LoadKey reads a key file: MinSecret or more bytes, either raw or as hex
// text (what NewSecretFile writes). The file must not be readable by group
// or others.
func LoadKey(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrKeyFile, path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is readable by others (mode %v); chmod 600 it", ErrKeyFile, path, st.Mode().Perm())
	}
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	b = b[:n]
	if t := bytes.TrimSpace(b); len(t) > 0 && len(t)%2 == 0 {
		if h, err := hex.DecodeString(string(t)); err == nil {
			b = h
		}
	}
	k, err := NewKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// NewSecretFile writes a fresh 32-byte secret, as hex, to a new file of
// mode 0600.
func NewSecretFile(path string) error {
	s := make([]byte, MinSecret)
	rand.Read(s)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	if _, err := fmt.Fprintf(f, "%x\n", s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// NewKey derives the TLS identity of a secret.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("%w: %d bytes of secret, want at least %d", ErrKeyFile, len(secret), MinSecret)
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, "ringfire tls identity", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	k := &Key{secret: bytes.Clone(secret), pub: priv.Public().(ed25519.PublicKey)}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Unix(0, 0),
		NotAfter: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.pub, priv)
	if err != nil {
		return nil, fmt.Errorf("auth: certificate: %w", err)
	}
	k.cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}
	return k, nil
}

// ServerTLS is the source's TLS configuration: it demands the mirror's
// certificate and accepts only one made from the same secret.
func (k *Key) ServerTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{k.cert}, ClientAuth: tls.RequireAnyClientCert,
		MinVersion: tls.VersionTLS13, VerifyPeerCertificate: k.verify}
}

// ClientTLS is the mirror's TLS configuration. The usual chain check is
// replaced by pinning: the source's certificate must carry the public key
// of the shared secret.
func (k *Key) ClientTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{k.cert}, InsecureSkipVerify: true,
		MinVersion: tls.VersionTLS13, VerifyPeerCertificate: k.verify, ServerName: "ringfire"}
}

func (k *Key) verify(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return ErrWrongKey
	}
	c, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWrongKey, err)
	}
	if pub, ok := c.PublicKey.(ed25519.PublicKey); !ok || !pub.Equal(k.pub) {
		return ErrWrongKey
	}
	return nil
}

// datagramKey derives the datagram key of one source incarnation.
func (k *Key) datagramKey(incarnation []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, k.secret, incarnation, "ringfire datagrams", 32)
}

// NewIncarnation returns fresh random bytes naming a source incarnation.
func NewIncarnation() []byte {
	b := make([]byte, IncarnationSize)
	rand.Read(b)
	return b
}

// IncarnationSize is the size of an incarnation, in bytes.
const IncarnationSize = 32
