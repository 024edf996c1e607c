// Package wire is the codec of ringfire's replication protocol (version 1,
// docs/protocol.md): frame headers and kinds, the handshake payloads
// (HELLO, GEOMETRY, MULTICAST), NAK, the DATA record shapes, and the
// frames of the extensions: STATUS and REPORT (telemetry), SESSION and
// ERROR (keyed replication and the wide session). It only encodes and decodes bytes: no sockets, no
// goroutines, no clock. It imports shm for the definitions the wire carries
// (ring layout, flags, blob descriptors), never to map a ring.
//
// Append* functions append a whole frame (header and payload) to a buffer;
// Parse* functions check a payload strictly against the wire spec and
// return errors wrapping ErrMalformed, ErrMagic, ErrVersion or ErrTooLarge.
package wire
