// Package role is what ringfire-bench does when the bench re-executes it
// as a child process of the deployed, rings, openloop or archive section: a pinger that
// times round trips, an echo that sends every record back, or a relay
// that passes records on. The parent (package deployed) says which in the
// environment variable Env, as a Spec in JSON; the binary calls FromEnv
// before anything else and runs the role instead of the command.
//
// # The protocol, on the role's stdin and stdout
//
//	parent (deployed, via proc)               child (this package)
//	  Start with Env = Spec ───────────────▶  create its rings or socket
//	  Expect LineReady        ◀────────────── "ready"
//	  (start ringfire serve, mirror, run)      open what it reads once a
//	                                           mirror made it
//	  Expect LineMeasuring    ◀────────────── pinger: "measuring" after the
//	                                           warm-up (WarmUp, ≤ WarmUpMax)
//	  read CPU times, meter hiccups            Samples round trips (≤ Limit)
//	  Expect LineResult       ◀────────────── "result {percentiles JSON}"
//	  close stdin ─────────────────────────▶  return (bounded wait)
//
// Roles:
//
//	RingPinger, RingEcho    one ring each way, waiting as a bench wait name
//	                        says (deployed section, six or four processes)
//	DgramPinger, DgramEcho  the datagram alone, in a DatagramStyles style
//	RingsPinger, RingsEcho  N rings polled on a locked thread (rings
//	                        section; RingsEcho is also the hand-offs'
//	                        relay)
//	ArchProducer,           a producer pushing at a rate, archive.Recorder,
//	ArchRecorder,           archive.Replay (archive section): after ready
//	ArchReplayer            each waits for a command on stdin (go, push,
//	                        or wait N) before it measures, then says
//	                        result (push and wait any number of times)
//	OpenProducer,           a producer stamping every record as it pushes
//	OpenReader              it at a rate, a reader timing each record's
//	                        one way (openloop section): after ready each
//	                        takes commands (push, read), any number
//	Forwarder               the lines section's delay line between two
//	                        interfaces of a middle namespace (package
//	                        delayline): after ready, forwards until stop
//
// # Files
//
//	role.go      Spec, Env, the protocol lines, FromEnv, the ping loop
//	ring.go      the ring pinger and echo
//	datagram.go  the datagram pinger and echo
//	rings.go     the N-ring pinger and echo (relay)
//	copy.go      CopyRecords, one pass of a polling relay
//	archive.go   the archive producer, recorder and replayer; the paced push
//	openloop.go  the open-loop producer and reader
//	forward.go   the lines section's forwarder
package role
