package bench

import (
	"crypto/rand"
	"slices"
	"strings"
	"sync"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/auth"
)

// KeyModes are the suffixes a transport may carry to measure keyed
// replication: "udp-unicast+auth" (ServerConfig.Key: sealed datagrams,
// TLS on TCP) and "udp-unicast+encrypt" (Key and Encrypt). The ping-pong,
// datagram round trip and stress sections measure them.
var KeyModes = []string{"auth", "encrypt"}

// ValidTransport reports whether tr names a transport, with or without a
// key mode.
func ValidTransport(tr string) bool {
	base, mode := splitKey(tr)
	return slices.Contains(Transports, base) && (mode == "" || slices.Contains(KeyModes, mode))
}

// splitKey splits "udp-unicast+auth" into its transport and key mode.
func splitKey(tr string) (base, mode string) {
	base, mode, _ = strings.Cut(tr, "+")
	return base, mode
}

// benchKey is the run's shared secret, made on first use.
var benchKey = sync.OnceValue(func() *auth.Key {
	s := make([]byte, auth.MinSecret)
	rand.Read(s)
	k, err := auth.NewKey(s)
	if err != nil {
		panic(err) // a 32-byte secret always makes a key
	}
	return k
})

// applyKey sets the key mode's settings on a source's and a mirror's
// configuration.
func applyKey(mode string, s *replica.ServerConfig, m *replica.MirrorConfig) {
	if mode == "" {
		return
	}
	s.Key, m.Key = benchKey(), benchKey()
	s.Encrypt, m.Encrypt = mode == "encrypt", mode == "encrypt"
}

// sealPair seals and opens the datagram round trip's datagrams as a keyed
// hop would (nil for no key mode): one sealer and opener per direction.
type sealPair struct {
	seal *auth.Sealer
	open *auth.Opener
}

func newSealPairs(mode string) (ab, ba *sealPair) {
	if mode == "" {
		return nil, nil
	}
	mk := func() *sealPair {
		s, open, err := benchKey().Datagrams(auth.NewIncarnation(), mode == "encrypt")
		if err != nil {
			panic(err)
		}
		return &sealPair{seal: s, open: open()}
	}
	return mk(), mk()
}
