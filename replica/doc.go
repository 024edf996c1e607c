// Package replica mirrors a ringfire ring across hosts: a Server serves a
// ring read-only to mirrors, a Mirror keeps a local ring identical to it
// (same sequence numbers, records in order, never duplicated). Every mirror
// has a TCP control connection (handshake, history, NAK repair); records
// travel over it or as UDP datagrams (multicast, or unicast after a punch)
// through a Transport. The wire is ringfire's replication protocol,
// version 1, described in docs/protocol.md; its codec is package
// replica/wire.
//
// # Files
//
// source_*.go hold the serving side (Server, its sessions, the datagram
// sender and its hand-off, the ring feed, the mirror table, admission,
// the keyed handshake), mirror_*.go the mirroring side (Mirror, its
// connection, sequencer, ring, STATUS reports, keyed handshake and
// datagram checks); transport.go, udp*.go, stats.go, events.go and
// read_frame.go are shared. Package replica/auth holds the keys and the
// datagram seals of keyed replication.
//
// # Goroutines of a Server
//
// Serve runs, until Close, or until its context ends and the graceful stop
// (below) is done:
//
//   - the accept loop (Serve's own goroutine), parked in the Go netpoller
//     on the listener; a helper goroutine closes the listener when the
//     context ends, which wakes it. It admits a connection or closes it at
//     once (MaxConns, MaxConnsPerAddr, MaxPending: counts under Server.mu),
//     and backs off on a timer after EMFILE and the like.
//   - the sender (sendLoop), on a locked OS thread of its own (pinned with
//     ServerConfig.Pin), the only goroutine that waits on the served ring
//     (Ring.Await with the shm strategy of ServerConfig.Wait: adaptive
//     spins, then yields with sched_yield, then sleeps on the ring's futex,
//     which the producer's publish wakes; block sleeps at once, yield never
//     sleeps, spin never pauses; in adaptive and yield, a sender that has
//     found records for idle.BusyYieldEvery without waiting yields once,
//     as a Loop does: sender.hold), bounded by a deadline (the next datagram
//     heartbeat: 1 ms after data, doubling while idle up to 128 ms; the
//     linger of a pending frame; 200 ms without datagrams). It sends DATA and heartbeat datagrams through the
//     Transport (kernel UDP waits for socket room in ppoll) and,
//     whenever write_seq moved and a session's writer sleeps on its wake
//     channel (Server.listening), kicks the wake relay. Its rounds hold sendMu: a
//     mirror served again in the same process (a hub) calls Handoff after
//     each publish, which runs a round on the mirror's goroutine when the
//     sender is not in one (TryLock) and wakes the sessions; the sender's
//     own wait checks write_seq before it sleeps, so nothing is missed.
//     Once handed its records, the sender stops watching the ring: it
//     sleeps in ppoll on an eventfd until its deadline (handWait), which
//     a Handoff writes when data brought the next heartbeat nearer by
//     more than 1 ms.
//   - punchLoop, when there is a datagram transport: RecvBatch with a
//     100 ms wait (ppoll for kernel UDP; Go's poller for AF_XDP and
//     AF_PACKET, whose sockets are in it only during that wait: no socket
//     of a transport is in Go's poller for good, so no datagram and no
//     freed send buffer wakes a thread nobody needs; AF_XDP sockets shared
//     with a mirror that watches them are not even then: the mirror hands
//     the PUNCH over). A PUNCH publishes the mirror's address to the
//     sender (dests, an atomic pointer).
//   - a TCP-only (stream) session on a plain connection whose writer is
//     caught up is written by the hot threads themselves: the writer
//     parks, handing its stream state to them (session.hand, an atomic
//     owner word), and wakeSessions' caller sends the new records' frames
//     with one non-blocking write(2) each (sendDirect). What the socket
//     does not take goes into the writer's buffer, and only then (or for
//     more than a burst, or a TLS connection) is the writer woken. A
//     sender that finds the stream taken by another skips it; the one
//     holding it looks at write_seq again as it gives it back (giveBack).
//   - the wake relay (idle.Relay): parked in the netpoller on an eventfd
//     that the sender (or Handoff, or the Loop's server member) writes
//     when it kicks; it sends on every session's wake channel (capacity
//     1, never blocking). The sender does not send on them itself: a
//     goroutine readied from a hot thread waits in that thread's P's
//     runnext, which another P steals only after a usleep(3) that the
//     kernel's 50 µs timer slack stretches (measured: push to the
//     writer's TCP write 76.5 µs p50 before, 20.2 after).
//   - telemetryLoop: a 10 ms ticker; samples write_seq, raises and clears
//     the lag events, forgets mirrors that left.
//   - watchRing: a 200 ms ticker; when the ring file is replaced it closes
//     every connection and cancels Serve's context.
//   - per mirror, two goroutines. serveConn's goroutine reads the peer's
//     first byte (a TLS handshake for a keyed source, HELLO otherwise;
//     the wrong one gets an ERROR frame), does the handshake
//     and then writes (writeLoop): history and streamed records over TCP,
//     sleeping on its wake channel (the relay) or a timer (the TCP
//     heartbeat, 200 ms; 1 ms while catching up; once datagrams carry
//     the records, only the heartbeat timer), never on the futex, which
//     would hold a thread per mirror. The reader (readLoop) is
//     parked in the netpoller on the connection: it answers a NAK itself,
//     writing under the session's lock, and applies a STATUS to the mirror
//     table, whose change closes a channel that wakes Server.AwaitApplied.
//
// ServerConfig.Events is called from the connection's goroutine (connect,
// disconnect, reject, no punch) and from telemetryLoop (lag events).
//
// # Stopping
//
// Close, and a replaced ring, close every connection at once. The end of
// Serve's context (SIGTERM in the CLI) is a graceful stop instead
// (server_stop.go), bounded by 1 s: Serve stops accepting and closes the
// connections still in their handshake; the sender, under sendMu, sends
// every record the ring holds that the datagram stream has not carried,
// whatever the linger, then a final heartbeat naming the last one, and
// runs no round after it. Each session then sends over TCP what its
// mirror is owed (a catch-up's history, a TCP stream up to the ring's
// write_seq at the stop) and a heartbeat with its last record, so that a
// mirror that lost the tail NAKs it while the session still answers; it
// closes its sending side once the mirror's STATUS says it applied it
// all, or after 500 ms without a write (a mirror without telemetry), and
// waits for the mirror to close its end, so that no unread byte resets
// the connection. At the deadline the connections left are closed: a
// peer that never reads cannot hold the stop. A Mirror's Run, when its
// context ends, returns after the step under way: every record applied
// is published (every step publishes, even one that fails) and its Stats
// are final.
//
// # Goroutines of a Mirror
//
// A Mirror works in the goroutine that calls Run (or Connect and Step):
// it dials and does the handshake synchronously, then steps. Run locks
// that goroutine to its OS thread (pinned with MirrorConfig.Pin). A step
// takes the control frames queued by the reader (a channel; or reads
// them from the socket itself, direct mode below), receives
// datagrams with Transport.RecvBatch without waiting, writes the records
// into the mirror ring and publishes write_seq there after each datagram
// (shm wakes the ring's futex waiters, the mirror's local readers), writes
// a NAK itself when one is due, and hands a STATUS to the status writer.
// A hole that a later datagram shows is NAKed at once; one that only a
// heartbeat shows (a TCP heartbeat overtakes the datagrams) waits while
// the last receive filled its batch or the transport holds datagrams back
// (Withholder: AF_PACKET's unretired block), at most NakRepeat.
// When a step found nothing, Run waits as MirrorConfig.Wait says
// (mirror_wait.go, internal/idle): adaptive spins, then yields, then
// sleeps in ppoll(2) on the transport's descriptors (Pollable) and an
// eventfd (the Waker) that the TCP reader writes after queueing a frame,
// that shared AF_XDP sockets write after handing the mirror a datagram,
// and that the end of Run's context writes; the sleep is bounded by the
// next NAK repeat, punch or STATUS. A transport that is not Pollable is
// waited for in RecvBatch (1 ms) instead. Between connections Run
// waits MirrorConfig.Reconnect on a timer. Up to two goroutines live with
// each connection:
//
//   - the reader (conn.readLoop), parked in the netpoller on the TCP
//     connection, parses frames into pooled buffers and queues them on the
//     frame channel (256 deep: it blocks when the mirror falls behind),
//     then notifies Run's Waker (an eventfd write only if Run sleeps); it
//     ends with an error on a channel of its own, which Step returns once
//     the frames queued before it are applied. A mirror without datagrams
//     on a plain TCP connection has no reader: the step reads the socket
//     itself without blocking (tcpReader, direct mode: read(2) on the
//     descriptor, not through Go's poller) and Run, or its Loop, sleeps
//     in ppoll on it; its socket asks for an 8 MiB receive buffer, where
//     the reader read ahead. That saves the reader's wake-up and the
//     Waker's, two of a same-host mirror's four thread wake-ups per
//     record. The socket also leaves Go's poller (rawConn: duplicated, the
//     net.TCPConn closed), so no frame wakes the runtime's epoll thread;
//     the status writer and the NAKs write on the rawConn, which waits
//     in ppoll for room. A mirror of a source's Unix socket
//     (ServerConfig.Unix, Source "unix:PATH") is such a mirror, and the
//     source's side of a Unix session is a rawConn from its accept on
//     (server_unix.go): a Unix stream wakes its writer's epoll set for
//     every frame the reader takes.
//   - the status writer, when the source takes telemetry: an idle.Relay
//     parked in the netpoller on an eventfd, which the run loop kicks
//     after it put a STATUS in a one-slot channel (the newest STATUS
//     replaces an unsent one); it writes each frame with one Write. A
//     failed write closes the connection, so that the reader, then Step,
//     see the error. (A channel send from the run loop's hot thread
//     would leave the writer in that thread's P's runnext slot, stolen
//     only after a usleep(3) of about 50 µs: see idle.Relay.)
//
// MirrorConfig.Events is called from the goroutine that calls Run,
// Connect, Step or Close.
//
// # One loop for many rings (Loop)
//
// With ServerConfig.Loop and MirrorConfig.Loop, the hot loops above are
// not threads of their own: one Loop thread turns through them all, a
// sender's round and a mirror's step each turn, and waits once when no
// member found work.
//
//	           ┌────────────── Loop.Run (one locked thread) ─────────────┐
//	ring A ──▶ │ serverMember A: sender round ─▶ Transport.SendBatch      │
//	ring B ──▶ │ serverMember B: sender round ─▶ Transport.SendBatch      │
//	socket ──▶ │ mirrorMember C: step (TCP frames, RecvBatch(0), publish) │──▶ ring C'
//	           │ none found work: idle.Idler.Idle (spin, sched_yield,     │
//	           │ or ppoll on every mirror's descriptors and the Waker)    │
//	           └──────────────────────────────────────────────────────────┘
//
// Who wakes a sleeping Loop: a datagram (a mirror's descriptor in its
// ppoll); the Waker's eventfd, written by a mirror's TCP reader, a shared
// AF_XDP socket's drain, an add or a remove, the end of Run's context,
// and each server's ringWatch: a goroutine the Loop arms just before it
// sleeps (idle.Idler.OnSleep), which sleeps on its ring's futex until the
// sequence the sender waits for is published (the producer's FUTEX_WAKE),
// notifies, and waits to be armed again. A server on a Loop whose
// transport is a Peeker (AF_XDP) has no punchLoop: its turns receive the
// PUNCHes when the transport has something pending. Serve's goroutine
// (loopSend) and Run's (runInLoop) only add their member and remove it
// when they end; remove returns once no turn of it is under way
// (Loop.turnMu).
//
// # Mirror telemetry (a negotiated extension)
//
// A mirror sets HelloTelemetry in HELLO; a source that takes telemetry
// answers GeometryTelemetry in GEOMETRY, and only then does the mirror send
// a STATUS frame (KindStatus, 9) over TCP every StatusInterval (100 ms),
// and early: when a REPORT (KindReport, 12) asked for a record it has now
// applied (HelloReportOnAsk, acknowledged by GeometryReportOnAsk: an AwaitApplied
// and a graceful stop ask), or, with a source that did not acknowledge
// that, whenever it has just caught up. Peers that do not announce the
// bits get the older bytes exactly. The header's seq is the last sequence
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
// is back within a quarter), and Server.AwaitApplied blocks until n mirrors have
// applied a sequence, like Redis WAIT.
//
// # Wide session and keyed replication (negotiated extensions)
//
// HELLO bit4 asks for the 64-bit session id: the source answers a SESSION
// frame (10) after MULTICAST, and unicast datagrams to that mirror end with
// the id (ServerConfig.WideMulticast does it for a group). With
// ServerConfig.Key and MirrorConfig.Key the connection is TLS 1.3 pinned
// to the shared key both ways, SESSION carries the source incarnation, and
// every datagram and PUNCH is sealed (auth.Sealer) and checked
// (auth.Opener) before it is parsed. A peer that does not match gets an
// ERROR frame (11) saying why. docs/protocol.md has the bytes.
package replica
