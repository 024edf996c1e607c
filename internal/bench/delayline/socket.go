package delayline

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/idle"
)

// readTimeout bounds one read, so that a reading loop sees its stop.
const readTimeout = 20 * time.Millisecond

// socketBuf is each socket's receive and send buffer.
const socketBuf = 4 << 20

// htons is a 16-bit value in network order, as AF_PACKET takes protocols.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// packetSocket is a raw AF_PACKET socket bound to one interface, taking
// every protocol, blind to frames the host sends on it.
type packetSocket struct {
	fd      int
	ifindex int
	name    string
}

// openSocket opens the socket of interface name in the calling thread's
// network namespace.
func openSocket(name string) (*packetSocket, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("delayline: interface %q: %w", name, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("delayline: AF_PACKET socket: %w", err)
	}
	s := &packetSocket{fd: fd, ifindex: ifc.Index, name: name}
	tv := unix.NsecToTimeval(readTimeout.Nanoseconds())
	for _, o := range []struct {
		level, opt, v int
	}{
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1},
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuf},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuf},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			s.close()
			return nil, fmt.Errorf("delayline: %s: socket option %d: %w", name, o.opt, err)
		}
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		s.close()
		return nil, fmt.Errorf("delayline: %s: SO_RCVTIMEO: %w", name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index}); err != nil {
		s.close()
		return nil, fmt.Errorf("delayline: bind %s: %w", name, err)
	}
	return s, nil
}

func (s *packetSocket) close() { unix.Close(s.fd) }

// read reads the next frame another host sent on the interface into b:
// its length, or 0 when none came within readTimeout.
func (s *packetSocket) read(b []byte) (int, error) {
	for {
		n, from, err := unix.Recvfrom(s.fd, b, 0)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("delayline: read %s: %w", s.name, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // the host's own (PACKET_IGNORE_OUTGOING should spare us)
		}
		return n, nil
	}
}

// write sends frame f out of the interface.
func (s *packetSocket) write(f []byte) error {
	if _, err := unix.Write(s.fd, f); err != nil {
		return fmt.Errorf("delayline: write %s: %w", s.name, err)
	}
	return nil
}

// now is the monotonic clock in nanoseconds, which sleepUntil takes.
func now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// sleepUntil sleeps until the monotonic clock reads t (nanoseconds).
func sleepUntil(t int64) {
	ts := unix.NsecToTimespec(t)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}

// lockThread locks the calling goroutine to its thread; with slack, sets
// the thread's timer slack to 1 ns, so that a sleep ends when it is due,
// not up to 50 µs later (the default slack); with realtime, schedules it
// SCHED_FIFO at priority 1, so that a frame waking it is forwarded at
// once rather than after the busy threads of the host (a wire does not
// wait for a CPU). It raises GOMAXPROCS by one as idle.LockThread does:
// a thread blocked in recvfrom keeps its P, and without a P of its own
// the woken sender waited for the runtime's monitor to take one back
// (a frame forwarded up to 118 ms late in a lines run). The thread is
// never unlocked: when the goroutine ends, Go retires it, with its slack
// and policy.
func lockThread(slack, realtime bool) error {
	if _, err := idle.LockThread(-1); err != nil { // never unlocked
		return fmt.Errorf("delayline: %w", err)
	}
	if slack {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("delayline: PR_SET_TIMERSLACK: %w", err)
		}
	}
	if realtime {
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
			return fmt.Errorf("delayline: SCHED_FIFO: %w", err)
		}
	}
	return nil
}
