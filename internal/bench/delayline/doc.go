// Package delayline is the lines section's fault on a line: a forwarder
// between two interfaces of a middle namespace that passes every frame
// from one (In, the source's side) to the other (Out, the mirror's side)
// Delay later, dropping each DATA frame of the replication protocol with
// probability Loss (a seeded PRNG), and every frame the other way at once.
// This kernel has no netem, so the bench builds its own delay line.
//
// Two goroutines read (one per direction, each a plain AF_PACKET socket
// bound to its interface, outgoing frames ignored); a delayed frame waits
// in a bounded queue for a sender on a locked thread whose timer slack
// is 1 ns, which sleeps until the frame is due (an absolute
// clock_nanosleep) and sends it. With Realtime every thread of the line
// is SCHED_FIFO, so that on a busy host the line still acts as a wire. Every loop is bounded: reads time out so
// that Run sees its stop, a full queue drops (and counts) the frame.
//
// # Files
//
//	doc.go       this
//	line.go      Config, Stats, Open, Run
//	socket.go    the AF_PACKET sockets, the clock, the sleeper's thread
//	frame.go     telling a DATA frame: its UDP port, kind, first sequence
package delayline
