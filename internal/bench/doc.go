// Package bench measures ringfire's datagram paths side by side: the
// sections of a ringfire-bench run (Sections), each measurement of them,
// and Run, which takes them in one run between network namespaces it
// creates and removes (root is needed). It reports into a report.Report
// and never fails on a time.
//
// # A run: who starts what, which process measures what
//
//	cmd/ringfire-bench: flags → Config
//	  │
//	  ▼
//	bench.Run
//	  │ newRig: namespaces A and B joined by veth pairs (rig.go)
//	  │ measureStall: one thread reads the clock → Machine.Stall
//	  │ plan: one step per measurement, in section order (plan.go)
//	  │
//	  ├─ in this process (GOMAXPROCS 8), every endpoint a goroutine:
//	  │    pingpong  loop.go, datagram.go  source → mirror → echo → mirror,
//	  │                                    timed here; the datagram alone
//	  │    stress    stress.go             open loop per rate; the zero-loss
//	  │                                    sweep per wait (one hop)
//	  │    stages    stages*.go, waitack.go push-to-read per path, and the
//	  │                                    floors: relays on locked threads
//	  │    fanout    fanout.go             1..N mirrors; Push cost; sendcost
//	  │
//	  ├─ every endpoint a process of its own:   deployed, rings, openloop, lines
//	  │    package deployed (Bench, made once per run): proc.Start, from a
//	  │    launcher thread inside namespace N1 or N2, of
//	  │      ringfire serve | mirror | run    (the ringfire binary)
//	  │      ringfire-bench as a role.Spec    (pinger, echo, relay, open-loop
//	  │                                        producer and reader, the rings'
//	  │                                        floor; package role)
//	  │    the pinger times the round trips and prints their percentiles,
//	  │    the open-loop reader each record's one way at each offered rate
//	  │    (openloop.go plans it, after stress: its zero-loss rate);
//	  │    this process reads every process's CPU, meters its own hiccups,
//	  │    pushes the rings section's load and scrapes /metrics
//	  │
//	  └─ archive: package bench/archive (archive.go plans it), from a
//	       launcher thread inside namespace A: a producer, a recorder and a
//	       replayer, each ringfire-bench as a role.Spec pinned to a CPU;
//	       dd on tmpfs and on the disk; seek and compression in this
//	       process; for the catch-up, ringfire serve --archive there and
//	       ringfire mirror from a launcher in namespace B
//	  │
//	  ▼
//	report.Report → WriteTable | WriteJSON | WriteSVG | WriteMarkdown
//
// # Packages
//
//	bench          Config, Run, the plan; the sections measured in this process
//	bench/deployed the sections whose endpoints are processes: deployed, rings,
//	               openloop
//	bench/archive  the archive section: recording, replay, seek, compression,
//	               a mirror catching up from the archive
//	bench/report   the Report types; text, JSON, SVG and the page docs/benchmarks.md
//	bench/proc     starting child processes in a namespace, their lines, CPU and end
//	bench/role     what a re-executed ringfire-bench does as pinger, echo, relay,
//	               the open loop's producer or reader, or the archive
//	               section's producer, recorder or replayer
//	bench/pace     pushing at a rate, the zero-loss sweep, polling with a bound
//	bench/hist     the latency histogram both sides record into
//	bench/delayline the lines section's delay line: a forwarder between two
//	               interfaces that delays and drops frames (no netem here)
//
// # Files
//
//	run.go           Config, Run, the machine
//	plan.go          the plan of a run: one step per measurement
//	rig.go           the namespaces, sources and mirrors in this process
//	keyed.go         the +auth and +encrypt transports
//	loop.go          the closed loop of pingpong and stress
//	datagram.go      the datagram round trip alone, in this process
//	stress.go        the open loop and the zero-loss sweep's steps
//	stages.go        push-to-read per path
//	stages_floor.go  the stages' floors: relays on locked threads
//	waitack.go       the source's Wait for its mirrors
//	fanout.go        fan-out and send cost
//	stall.go         the machine's stalls before a run
//	openloop.go      the openloop section's steps, rates and zero-loss rate
//	lines.go         the lines section's step
//	archive.go       the archive section's steps
package bench
