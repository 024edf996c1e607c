// Package netpoll parks a goroutine in Go's network poller until a
// descriptor is readable, a deadline passes, or another goroutine wakes it:
// what the AF_XDP and AF_PACKET pollers share. No thread blocks in a
// syscall meanwhile.
package netpoll
