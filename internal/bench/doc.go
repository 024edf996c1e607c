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
//	  │ newRig: namespaces A and B on one veth pair (rig.go)
//	  │ measureStall: one thread reads the clock → Machine.Stall
//	  │ plan: one step per measurement, in section order (run.go)
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
//	  └─ every endpoint a process of its own (deployed*.go, rings*.go):
//	       proc.Start, from a launcher thread inside namespace N1 or N2:
//	         ringfire serve | mirror | run    (the ringfire binary)
//	         ringfire-bench as a role.Spec    (RINGFIRE_BENCH_ROLE: pinger,
//	                                          echo, relay; package role)
//	       the pinger times the round trips and prints their percentiles;
//	       this process reads every process's CPU (proc.CPUTime), meters
//	       its own hiccups, writes the rings section's load and scrapes
//	       the run processes' /metrics (rings_load.go)
//	  │
//	  ▼
//	report.Report → WriteTable | WriteJSON | WriteSVG | WriteMarkdown
//
// # Packages
//
//	bench          the sections, their measurements and Run (this package)
//	bench/report   the Report types; text, JSON, SVG and the page docs/benchmarks.md
//	bench/proc     starting child processes in a namespace, their lines, CPU and end
//	bench/role     what a re-executed ringfire-bench does as pinger, echo or relay
//	bench/hist     the latency histogram both sides record into
//
// # Files
//
//	run.go            Config, Run, the plan of a run, the machine
//	rig.go            the namespaces, sources and mirrors in this process
//	keyed.go          the +auth and +encrypt transports
//	loop.go           the closed loop of pingpong and stress
//	datagram.go       the datagram round trip alone, in this process
//	stress.go         the open loop and the zero-loss sweep
//	stages.go         push-to-read per path
//	stages_floor.go   the stages' floors: relays on locked threads
//	waitack.go        the source's Wait for its mirrors
//	fanout.go         fan-out and send cost
//	stall.go          the machine's stalls before a run
//	hiccup.go         the hiccup meter beside the deployed samples
//	deployed.go       the deployed topology and its six-process round trip
//	deployed_args.go  ringfire serve and mirror arguments, the binary
//	deployed_loop.go  the four-process round trip of a loop's wait
//	deployed_relay.go the hand-offs alone between processes
//	deployed_trace.go the round trip hop by hop (--trace)
//	rings.go          the rings section's hops and run files
//	rings_plan.go     its plan and round trips
//	rings_load.go     its zero-loss load and the run processes' counters
package bench
