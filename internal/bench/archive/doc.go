// Package archive measures the archive section of ringfire-bench: package
// archive (the ringfire one) recording a ring, replaying it, seeking in it
// and compressing it, the endpoints processes of their own as deployed.
//
// # Who runs what
//
//	this process (ringfire-bench)          processes (ringfire-bench as a role.Spec)
//	  RecordTmpfs, RecordDisk ──────────▶  producer (CPU 0): pushes into a ring at a rate
//	    a sweep of rates, per step:         recorder (CPU 1): archive.Recorder into the
//	    go, wait N, the CPU of both         archive directory; syncfs on the disk
//	  DD: dd oflag=direct on the disk
//	  Replay: writes the archive ───────▶  replayer (CPU 1): archive.Replay at speed 0,
//	                                        once to warm, once timed
//	  Seek: writes a 100 M-record archive on the disk, times Seek and
//	        SeekTime and the first Next, warm then cold (fadvise)
//	  Compress: each feed plain and compressed in tmpfs: sizes, sealing, a read
//	  Catchup ──────────────────────────▶  producer (CPU 0): N sequenced records;
//	    the fill, then timed: the         recorder (CPU 1): archives them, no gap
//	    mirror's start until its ring     ringfire serve RING --archive DIR (A)
//	    holds N; then a live load, the    ringfire mirror --from 1 (B, the veth)
//	    mirror's counters (--json) and its last records against the ring's
//
// The producer's and recorder's protocol is role's (ready, a command on
// stdin, result); this process reads each one's CPU time before the
// producer's go and after the recorder's result. Every file a measurement
// makes (rings, archives, dd's file) is removed when it ends.
//
// # Files
//
//	bench.go     Config, Bench, starting and pinning the roles, their CPU
//	record.go    the recording sweeps, tmpfs and disk
//	disk.go      the disk: its filesystem and device, free space, dd
//	replay.go    Replay
//	seek.go      Seek: the big archive, seeks warm and cold
//	compress.go  Compress: sizes, sealing time, reading
//	feed.go      the feeds (ringfire gen's, market data) and build
//	catchup.go   Catchup: the fill, the timed catch-up, live, the checks
//	catchup_procs.go  the catch-up's ringfire serve and mirror
package archive
