// Package proc starts and watches the child processes of the bench's
// deployed, rings and archive sections: a ringfire serve, mirror or run, or
// ringfire-bench re-executed as a role (package role). It knows nothing
// of what they do; it starts them inside a network namespace, reads the
// lines a role speaks, reads their CPU time and stops them.
//
// # A child's life
//
//	NewLauncher(ns) ── one OS thread locked inside ns for the launcher's life
//	    │
//	Start(l, role, argv, env, lines) ── fork+exec from that thread: the child
//	    │   inherits the namespace; its own process group; SIGKILL when the
//	    │   launcher thread or this process dies (Pdeathsig)
//	    ├── a role (lines): stdout read line by line (Expect), stdin held
//	    │   open; closing it tells the role to finish
//	    ├── a ringfire process: stdout and stderr kept, their last 8 KiB
//	    │   (Output), quoted by Failed
//	    ├── Send(line) ── a command on a role's stdin (the archive roles')
//	    ├── Pin(Pid(), cpu) ── every thread bound to one CPU
//	    ├── CPUTime(Pid()) ── utime+stime from /proc/PID/stat
//	    └── Stop ── close stdin, SIGKILL the group, wait for the reap
//
// # Files
//
//	launcher.go  Launcher: the namespace's forking thread
//	proc.go      Proc: start, lines, liveness, stop
//	cpu.go       CPUTime from /proc/PID/stat, Pin
//	tail.go      the tail buffer of a child's output, LastLines
package proc
