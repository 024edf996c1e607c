// Package ipcbench is the transport half of ringfire's inter-process
// round-trip benchmarks: the kernel IPC baselines the shared-memory ring is
// compared with.
//
// A parent process sends one MsgSize-byte message and waits for a child
// process to echo it back, over a Unix domain socket (SOCK_STREAM
// socketpair), a pair of pipes, or TCP loopback (127.0.0.1, TCP_NODELAY).
// The pieces are:
//
//   - NewLink (parent) creates a transport and the Client that drives it;
//     the child's ends are handed to the child process as inherited
//     descriptors (ChildFiles) or, for TCP, an address to dial (Addr).
//   - ServeChild (child) opens its end and runs Echo until the parent
//     closes its end; Serve does the same in-process (tests).
//   - StartChild and Watchdog run the child: typically the test binary
//     itself, re-executed with a role in its environment that its TestMain
//     runs instead of the tests; it exits when its parent dies or after a
//     time limit.
//
// Client.RoundTrip and Echo do not allocate per message, so the benchmarks
// built on them measure the transports, not the garbage collector.
package ipcbench
