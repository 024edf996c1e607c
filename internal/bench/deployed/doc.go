// Package deployed measures the bench sections whose endpoints are
// processes of their own, as a deployment runs them: the deployed
// section (the ring-to-ring round trip across six processes, or four
// with a loop per host; the datagram alone; the hand-offs alone) and the
// rings section (N rings per ringfire run process), and the openloop
// section (one way at fixed offered rates: a producer, serve and mirror
// or a run per host, a reader, each a process), and the lines section
// (A/B lines: zero-loss on one line and two, the one way with a line
// delayed or both losing, through forwarder processes). Package bench plans
// the measurements and calls Bench; this package starts the processes
// (package proc), tells the roles what to do (package role) and turns
// what they report into report types.
//
// # The six-process round trip, and who measures what
//
//	        N1                                 N2
//	pinger ── A ──▶ ringfire serve A ══veth0══▶ ringfire mirror ── A' ──▶ echo
//	  ▲                                                                 │
//	  └── B' ◀── ringfire mirror ◀══veth1══ ringfire serve B ◀── B ─────┘
//
//	pinger (role)   times every round trip, prints the percentiles
//	echo (role)     copies A' into B
//	this process    starts them all (proc, a launcher thread per
//	                namespace), reads each one's CPU before and after the
//	                samples (proc.CPUTime), meters its own hiccups, and
//	                with --trace pairs the processes' stamps into hops,
//	                records the kernel's scheduler events of their threads
//	                (an ftrace instance: sched_switch, sched_wakeup) and
//	                says, for the round trips above p99 and p99.9, which
//	                hop took the excess and whether the thread ending it
//	                ran, waited for a CPU or slept meanwhile
//
// A loop's wait name (loop-yield) puts each host's serve and mirror in one
// ringfire run (loop.go); the hand-offs alone replace the network with
// relays passing the record through rings in /dev/shm (relay.go); the
// rings section runs one ringfire run per side for N rings, this process
// pushing the zero-loss load and scraping the runs' /metrics
// (rings_load.go), one pinger and one echo for every ring's round trip.
//
// # Files
//
//	bench.go           Bench, Config: the sections' topology, made once
//	roundtrip.go       the topology, the six processes, measuring a pinger
//	args.go            ringfire serve and mirror arguments, the binary
//	loop.go            the four-process round trip of a loop's wait
//	relay.go           the hand-offs alone
//	trace.go           the round trip hop by hop (--trace)
//	sched.go           the scheduler's trace of the processes' threads
//	tails.go           the slowest round trips: their hop, its thread's time
//	hiccups.go         the hiccup meter: a thread sleeping 1 ms at a time
//	rings.go           the rings section's hops, run files and processes
//	rings_roundtrip.go Rings: its two phases, and the round trips
//	rings_load.go      its zero-loss load and the run processes' counters
//	openloop.go        OpenLoop: the open loop's processes and its steps
//	lines.go           Lines: A/B lines, its config, cases and zero-loss sweeps
//	lines_net.go       its delay lines: a middle namespace per line
//	lines_run.go       its run files (serve --multicast-b, mirror --iface-b)
//	lines_case.go      one case: forwarders, open loop, counters, drops
package deployed
