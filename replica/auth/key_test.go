package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := NewSecretFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); err != nil {
		t.Fatal(err)
	}
	if err := NewSecretFile(path); err == nil {
		t.Fatal("NewSecretFile overwrote a key")
	}
	os.Chmod(path, 0o644)
	if _, err := LoadKey(path); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("a world-readable key: %v", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abcd"), 0o600)
	if _, err := LoadKey(short); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("a short key: %v", err)
	}
	if _, err := LoadKey(dir); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("a directory: %v", err)
	}
}

// handshake runs a TLS handshake between a server with key s and a
// client with key c over a pipe, returning both errors.
func handshake(s, c *Key) (error, error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv, cli := tls.Server(a, s.ServerTLS()), tls.Client(b, c.ClientTLS())
	errc := make(chan error, 1)
	go func() {
		err := srv.HandshakeContext(context.Background())
		if err != nil {
			a.Close()
		}
		errc <- err
	}()
	cerr := cli.HandshakeContext(context.Background())
	if cerr != nil {
		b.Close()
	}
	return <-errc, cerr
}

func TestMutualTLS(t *testing.T) {
	k1 := testKey(t)
	k1b, _ := NewKey(bytes.Repeat([]byte{7}, MinSecret))
	k2, _ := NewKey(bytes.Repeat([]byte{9}, MinSecret))
	if serr, cerr := handshake(k1, k1b); serr != nil || cerr != nil {
		t.Fatalf("same secret: server %v, client %v", serr, cerr)
	}
	serr, cerr := handshake(k1, k2)
	if serr == nil || cerr == nil {
		t.Fatalf("another secret: server %v, client %v; both must fail", serr, cerr)
	}
	if !errors.Is(cerr, ErrWrongKey) && !errors.Is(serr, ErrWrongKey) {
		t.Fatalf("another secret: neither side says ErrWrongKey: server %v, client %v", serr, cerr)
	}
}
