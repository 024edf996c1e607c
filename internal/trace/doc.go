// Package trace stamps records at the stages of their way through a
// process (picked up by the sender, handed to the socket, received by the
// mirror, published in its ring, read), for ringfire-bench to say where
// the microseconds of a hop go. It is off unless RINGFIRE_TRACE names a
// directory: then each process keeps its stamps in memory and Flush writes
// them there, one file per process. Off, a stamp is one atomic load.
//
// A stamp is (stage, sequence, CLOCK_MONOTONIC nanoseconds): the clock is
// the host's, so stamps of different processes on one host compare.
package trace
