// Package replica mirrors a ringfire ring across hosts. A Server (the
// source) serves a ring read-only; a Mirror keeps a local ring identical
// to it: same sequence numbers, records in order, never duplicated. Every
// mirror has a TCP control session (handshake, history, NAK repair,
// heartbeats, STATUS); records travel over it, or as datagrams (multicast,
// or unicast after a PUNCH) through a Transport: kernel UDP here, AF_XDP
// and AF_PACKET in package transport. The wire is ringfire's replication
// protocol, version 1 (docs/protocol.md); its codec is package
// replica/wire, the keys and seals of keyed replication package
// replica/auth.
//
// # A record's path
//
//	producer --Push--> source ring (shm)
//	                      |  the sender waits (Ring.Await, the futex); or a Handoff, a Loop turn
//	                      v
//	               Server sender  ---- DATA, HEARTBEAT ---->  Transport
//	               (server_sender.go)      datagrams          (udp.go; AF_XDP,
//	                                                           AF_PACKET)
//	                                                              |  RecvBatch
//	                                                              v
//	               TCP session  <==== HELLO / GEOMETRY ====>  Mirror: Connect,
//	               (server_session*.go)  history, NAK ->      then Step
//	                                     DATA / GAP,          (mirror_step.go,
//	                                     HEARTBEAT, <- STATUS  mirror_sequencer.go)
//	                                                              |  Store, Publish
//	                                                              v
//	                                           mirror ring (shm) --> its readers
//
// A mirror that takes no datagrams (TCPOnly, a Unix socket, no punch in
// time) gets every record over its TCP session instead.
//
// # Reading order
//
// This file; transport.go (what a datagram transport is) and wait.go
// (WaitMode). The source: server_config.go, server.go (Serve and what it
// starts), server_sender.go and server_feed.go (the datagrams),
// server_session.go, server_session_write.go and server_session_read.go
// (one mirror's TCP session), history.go (what the ring lost, served from
// ServerConfig.History where a GAP went), server_telemetry.go,
// server_stop.go. The
// mirror: mirror.go, mirror_connect.go, mirror_run.go, mirror_step.go,
// mirror_sequencer.go, mirror_ring.go, mirror_wait.go. Then loop.go, and
// docs/protocol.md beside package wire for the bytes.
//
// # Words
//
// Three things wait, under three names:
//
//	WaitMode          how a hot loop (a sender, a mirror's run loop, a Loop) idles when
//	                  a poll found nothing: adaptive (sched_yield for a while, longer
//	                  while hot under load, idle.Duty; then block; it does not spin),
//	                  block, yield, spin. ServerConfig.Wait,
//	                  MirrorConfig.Wait, LoopConfig.Wait; wait.go, internal/idle.
//	AwaitApplied      Server.AwaitApplied blocks its caller until n mirrors have applied a
//	                  sequence, like Redis WAIT (server_await.go; Server.Wait is its
//	                  deprecated name).
//	shm.WaitStrategy  how a reader of a ring waits for write_seq; the sender's comes from
//	                  its WaitMode (ringWait, exported as RingWait).
//
// A session is the source's side of one mirror's TCP connection, a conn
// the mirror's. A session is in catch-up (history over TCP until it meets
// the datagram stream), live (datagrams carry the records) or stream (TCP
// carries everything). lastSent is the last sequence the datagram stream
// is done with. A hub is a mirror served again by a Server in the same
// process; MirrorConfig.Published = Server.Handoff sends its records on.
//
// # Goroutines and threads
//
// What each parks on, who wakes it, and what it wakes. Locked threads run
// on an OS thread of their own (pinned with Pin); a Loop replaces them.
//
//	SERVER (Serve)   parks on                     woken by                   wakes
//	accept loop      the listener (netpoller;     a connection; the          a serveConn goroutine
//	(Serve's own)    with Unix, fanIn's chan)     closer's Close             per connection
//	closer           the accept context           ctx end, Close,            the accept loop
//	                                              a replaced ring
//	fanIn acceptors  each listener (netpoller)    a connection               the accept loop
//	sender           the ring's futex (Ring.      the producer's publish,    the wake relay (Kick);
//	(sendLoop,       Await, WaitMode) until       the deadline; handed: a    writes parked stream
//	locked thread)   the next heartbeat or        Handoff that brings the    writers' records itself
//	                 linger; handed: ppoll on     next heartbeat nearer,     (sendDirect)
//	                 an eventfd                   ctx end
//	punchLoop        RecvBatch, 100 ms at most    a PUNCH, the 100 ms        the sender (dests)
//	wake relay       an eventfd (netpoller)       a Kick: the sender, a      session writers (wake
//	(idle.Relay)                                  Handoff, a Loop turn       chans), telemetryLoop
//	telemetryLoop    a timer: 10 ms while         a tick, the relay          Events (lag events),
//	                 write_seq moves, else                                   AwaitApplied (the
//	                 1 s; teleWake                                           table's change chan)
//	watchRing        a 200 ms ticker              a tick                     closes every connection
//	session writer   its wake and ask chans,      the relay, an              nobody: it writes its
//	(serveConn's     a timer (heartbeat           AwaitApplied, the          connection (parked, it
//	goroutine)       200 ms; 1 ms in catch-       reader in a graceful       lets the hot threads)
//	                 up), the graceful stop       stop, the timer
//	session reader   the connection (netpoller;   a NAK, a STATUS            answers NAKs itself,
//	(readLoop)       a Unix session: ppoll); the                             paced (server_budget.go);
//	                 repair budget's wait, at                                STATUS: AwaitApplied;
//	                 most 100 ms a frame                                     the writer (stop)
//	AwaitApplied     the table's change chan,     a STATUS, a session        nobody
//	(its caller)     ctx                          going live, Close
//
//	MIRROR (Run)     parks on                     woken by                   wakes
//	run loop         ppoll on the transport's     a datagram; the Waker:     the mirror ring's
//	(Run's own,      fds (direct: the socket)     the reader, a shared       readers (futex), the
//	locked thread)   and the Waker's eventfd      AF_XDP socket, ctx end;    status writer (Kick),
//	                 (block; adaptive after       the next NAK repeat,       Published (a hub's
//	                 yielding); RecvBatch 1 ms    punch or STATUS            Handoff)
//	                 if not Pollable; a timer
//	                 between connections
//	reader           the connection (netpoller);  TCP bytes; a step          the run loop (Waker)
//	(conn.readLoop,  the frame queue when full    taking frames
//	not direct)      (256 frames)
//	status writer    an eventfd (netpoller)       the run loop's Kick        nobody: it writes
//	(idle.Relay)                                                             STATUS on TCP
//
//	LOOP             parks on                     woken by                   wakes
//	Loop.Run         ppoll on its mirrors' fds    a datagram; the Waker:     ring watchers (arms
//	(locked thread)  and the Loop's Waker         a mirror's reader, a       them), the wake
//	                 (block; adaptive after       shared AF_XDP socket,      relays, the mirror
//	                 yielding)                    add, remove, ctx end,      rings' readers
//	                                              a ring watcher
//	ringWatch        its armed chan, then the     the Loop about to sleep;   the Loop (Waker)
//	(per server)     ring's futex (watchBound)    the producer's publish
//	loopSend, and    ctx, or their member's       ctx end, Close, a          the Loop (remove)
//	Run on a Loop    end                          failed step
//
// ServerConfig.History is read by a session's writer and reader only
// (Range, Read; they park in it while it reads): a hot thread whose direct
// send meets records the ring lost leaves them to the writer
// (errDeferred).
//
// ServerConfig.Events is called from the session's goroutine (connect,
// disconnect, reject, no punch, a handshake past its deadline), the
// accept loop (refused, evicted, accept failed)
// and telemetryLoop (lag); MirrorConfig.Events from the goroutine that
// calls Run, Connect, Step or Close.
//
// # Stopping
//
// Close, and a replaced ring, close every connection at once. The end of
// Serve's context is a graceful stop (server_stop.go), bounded by
// stopGrace (1 s): the last datagrams and a final heartbeat go out, each
// session sends its mirror what it is owed over TCP and closes once the
// mirror says it applied it all. A Mirror's Run, when its context ends,
// returns after the step under way, everything applied published.
//
// A ring file cut under its mapping (truncated by another process) ends
// what maps it, not the process: each goroutine that reads a ring defers
// a guard (runtime/debug.SetPanicOnFault, recovered at its top;
// server_ringlost.go, shm.Guard) that turns the fault into an error.
// Serve then closes every connection and returns ErrRingTruncated; a
// Mirror's session ends and its next one creates a fresh ring.
//
// # Telemetry and extensions
//
// A mirror that sets HelloTelemetry, answered with GeometryTelemetry,
// reports STATUS (wire/status.go) every StatusInterval, and early when a
// REPORT asks (HelloReportOnAsk). The source keeps a table of its mirrors
// (Server.Mirrors, MirrorInfo) whose lag counts from where each mirror's
// session started; a mirror whose lag passes half the ring's capacity
// raises EventLagging, and EventLagRecovered once back within a quarter. HELLO bit4
// asks for the 64-bit session id (SESSION, the wide session); with
// ServerConfig.Key and MirrorConfig.Key the session is TLS 1.3 pinned to
// the shared key and every datagram and PUNCH is sealed (package auth).
// HELLO bit6 (HelloHistory), answered with GeometryHistory by a source
// with a History, has what the ring lost served from that history over
// TCP, in order, before the ring's records (history.go). HELLO bit7
// (HelloLines), answered with GeometryLines and a second MULTICAST
// frame by a source with ServerConfig.MulticastB, has the mirror take
// the datagrams on two lines and apply the first copy of each frame
// (lines.go); a unicast mirror punches on both, line B's PUNCH with the
// key line B's MULTICAST gave it (lines_unicast.go). It starts no
// goroutine: the lines are one Transport to the sender and to the
// mirror's loop.
//
// # Files
//
//	doc.go                   this overview
//	history.go               History: records the ring lost, served from an archive, then the ring
//	lines.go                 two lines (A/B feeds): the source's lineSender, line B's MULTICAST
//	lines_recv.go            lineRecv: a mirror's two lines, first arrival counted, dark lines
//	lines_stats.go           LineStats: per line received, first, late (by how much), lost
//	lines_unicast.go         a unicast line B: punch keys, line B's PUNCHes, copies to both addresses
//	loop.go                  Loop: one locked thread that turns through many senders and mirrors
//	loop_mirror.go           a mirror connection as a Loop member (mirrorMember)
//	loop_server.go           a server's sender as a Loop member, and its ring watcher
//	mirror.go                MirrorConfig, From, Mirror, NewMirror, Stats, Close
//	mirror_conn.go           conn: a mirror's connection, its TCP reader goroutine
//	mirror_connect.go        Connect: dial, HELLO and GEOMETRY, the mirror ring, datagrams, PUNCH
//	mirror_events.go         MirrorEvent, MirrorEventKind
//	mirror_lines.go          the mirror's line B: HelloLines, its MULTICAST, the window
//	mirror_keyed.go          the mirror's TLS, SESSION and datagram checks of keyed replication
//	mirror_ring.go           mirrorRing: writes records at the source's sequences, publishes
//	mirror_run.go            Run: connect, step, reconnect
//	mirror_sequencer.go      sequencer: records in order, held frames, when to NAK
//	mirror_status.go         the mirror's identity and STATUS reports, the status writer
//	mirror_step.go           Step: TCP frames and datagrams applied, NAKs, punches
//	mirror_tcpread.go        tcpReader: direct mode, the run loop reading its socket itself
//	mirror_wait.go           how Run's loop idles (idle.Idler) and who wakes it
//	rawconn.go               rawConn: a socket out of Go's poller, waited for in ppoll
//	read_frame.go            reading whole frames from a stream; peer-closed errors
//	server.go                Server, NewServer, Serve, Close, the ring watcher
//	server_admit.go          connection limits, refusal, accept back-off
//	server_await.go          AwaitApplied (and its deprecated name Wait)
//	server_budget.go         the repair budget: NAK answers and history paced per address and in total
//	server_config.go         ServerConfig
//	server_direct.go         a parked stream writer's records written by the hot threads
//	server_events.go         ServerEvent, ServerEventKind (Event, EventKind deprecated)
//	server_feed.go           feed: ring records into DATA frames, never torn
//	server_handoff.go        Handoff: a hub's sender round on the mirror's thread
//	server_keyed.go          the source's TLS, incarnation and datagram seals
//	server_pending.go        the queue of connections not live yet, eviction, a failed handshake
//	server_punch.go          punchLoop: PUNCH datagrams, unicast destinations
//	server_refusal.go        RefusalKind: a refused peer's ERROR frame, counts, EventRefused per kind
//	server_registry.go       sessions by token, destinations, waking the sessions
//	server_ringlost.go       a ring cut under its mapping: ErrRingTruncated, the fault guards, lose
//	server_sender.go         sender: datagram rounds, pacing, heartbeats, sendLoop
//	server_seqindex.go       seqIndex: when each write_seq was first seen (the lag in time)
//	server_session.go        session: one mirror's TCP session, its handshake
//	server_session_read.go   the session's reader: NAKs, STATUS
//	server_session_write.go  the session's writer: history, stream, heartbeats, REPORT
//	server_stop.go           the graceful stop
//	server_telemetry.go      the table of mirrors, MirrorInfo, Mirrors
//	server_telemetry_loop.go telemetryLoop: sampling, lag events
//	server_unix.go           the Unix socket listener, fanIn
//	stats.go                 MirrorStats, ServerStats
//	transport.go             Transport, Pollable, Peeker, Withholder, DatagramSpec, errors
//	udp.go                   UDP: the kernel UDP transport
//	udp_io.go                UDP's SendBatch, RecvBatch (sendmmsg, recvmmsg, ppoll), Close
//	udp_unsafe.go            the mmsghdr structures of UDP's batch calls
//	wait.go                  WaitMode, Pin, the sender's ring wait
package replica
