// Package auth holds the keys of keyed replication (--key): the TLS
// identity both ends derive from the shared secret, and the sealing of
// datagrams, with replay refusal.
//
// A source and its mirrors share one secret (a key file). From it:
//
//	secret ──HKDF "ringfire tls identity"──▶ Ed25519 key ──▶ self-signed certificate
//	   │        both ends present it; each accepts only a peer whose certificate
//	   │        carries the same public key (TLS 1.3, mutual, fresh randoms from both
//	   │        sides: the challenge-response; its key schedule derives the session keys)
//	   │
//	   └──HKDF salt = incarnation (32 random bytes per source, sent in SESSION)──▶
//	            the datagram key of that source incarnation (AES-256-GCM)
//
//	TLS exporter "ringfire punch" ──▶ the PUNCH key of one mirror session
//
// A sealed datagram is the version-1 frame followed by a 24-byte trailer:
//
//	| header 16 | payload len | tag 16 | counter u64 |
//
// The counter is the sealer's datagram number (never repeated under one
// key) and the GCM nonce; with encryption the payload is ciphertext and
// the header the additional data, without it the tag authenticates header
// and payload (GMAC). An Opener refuses a counter it has seen or one that
// fell behind its window of 1024.
//
// Sealer and Opener are not safe for concurrent use: each belongs to one
// goroutine at a time (the sender's rounds, a mirror's loop).
package auth
