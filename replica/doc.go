// Package replica mirrors a ringfire ring across hosts: a Server serves a
// ring read-only to mirrors, a Mirror keeps a local ring identical to it
// (same sequence numbers, records in order, never duplicated). Every mirror
// has a TCP control connection (handshake, history, NAK repair); records
// travel over it or as UDP datagrams (multicast, or unicast after a punch)
// through a Transport. The wire is ringfire's replication protocol,
// version 1, described in docs/protocol.md.
//
// # Mirror telemetry (a negotiated extension)
//
// A mirror sets HelloTelemetry in HELLO; a source that takes telemetry
// answers GeometryTelemetry in GEOMETRY, and only then does the mirror send
// a STATUS frame (KindStatus, 9) over TCP every StatusInterval (100 ms),
// and early when it has just caught up. Peers that do not announce the bit
// get version 1 byte for byte. The header's seq is the last sequence
// applied (published in the mirror ring, readable there), its count the
// interval in ms; the 96-byte payload is:
//
//	 0         8          16               24         32          40        48
//	 +---------+----------+----------------+----------+-----------+---------+
//	 | lag u64 | naks u64 | retransmit u64 | gaps u64 | drops u64 | id u64  |
//	 +---------+----------+----------------+----------+-----------+---------+
//	48                        64                                          96
//	 +------------------------+-------------------------------------------+
//	 | transport [16]B        | name [32]B                                |
//	 +------------------------+-------------------------------------------+
//
// The source keeps a table of its mirrors (Server.Mirrors, MirrorInfo)
// with their lag in records and in time, raises EventLagging once a
// mirror's lag passes half the ring's capacity (EventLagRecovered when it
// is back within a quarter), and Server.Wait blocks until n mirrors have
// applied a sequence, like Redis WAIT.
package replica
