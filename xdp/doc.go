// Package xdp is AF_XDP sockets on golang.org/x/sys/unix: a UMEM, its fill
// and completion rings, and the RX and TX rings of one socket per queue.
// It moves Ethernet frames and knows nothing of what they carry; steering
// packets to the sockets is the job of an XDP program (package bpf).
//
//	            user space                         kernel
//	UMEM  ┌──────────┬──────────┬─────┬──────────┐
//	      │ frame 0  │ frame 1  │ ... │ frame N-1│  N = RXRingSize + RingSize
//	      └──────────┴──────────┴─────┴──────────┘  frames of FrameSize
//	      frames [0, RXRingSize) receive, the rest transmit
//
//	FillQueue        addr ───────────────────────▶ kernel writes a packet
//	(we produce)                                   into that frame
//	RXQueue          desc{addr,len} ◀───────────── received frames
//	(kernel produces)
//	TXQueue          desc{addr,len} ─────────────▶ frames to send
//	(we produce)
//	CompletionQueue  addr ◀─────────────────────── frames the kernel sent
//	(kernel produces)
//
// Each ring is a single-producer single-consumer array of a power-of-two
// size with a producer and a consumer index in memory shared with the
// kernel. The producer writes entries, then publishes them with an atomic
// store of its index; the consumer loads that index atomically, reads the
// entries, then releases them with an atomic store of its own index. The
// queue types follow gVisor's pkg/xdp: producers Reserve, Set and Notify;
// consumers Peek, Get and Release.
//
// A Socket is not safe for concurrent use, except that its receive side
// (Receive, Release) and its send side (ReserveTX, TXFrame, SubmitTX,
// Kick, Complete) touch disjoint state and may run in two goroutines, and
// Readable and Pending read only shared indices, from any goroutine. A
// Poller parks a goroutine in Go's network poller until one of its
// sockets has received frames.
package xdp
