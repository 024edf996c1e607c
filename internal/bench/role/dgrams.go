package role

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/idle"
	"golang.org/x/sys/unix"
)

// The rings section's floor: what N datagrams in flight at once cost
// between two processes with one thread each, no ring and no ringfire.
const (
	DgramsPinger = "dgrams-pinger" // a datagram on each of N sockets at once, each timed
	DgramsEcho   = "dgrams-echo"   // one thread polling N sockets, each datagram sent back
)

// dgramsEnds opens s.Sockets non-blocking UDP sockets, socket i bound to
// s.Local's port + i and connected to s.Peer's port + i, on a thread
// locked for the role (unlock undoes it after closing them).
func dgramsEnds(s Spec) (fds []int, d *idle.Idler, done func(), err error) {
	la, err := netip.ParseAddrPort(s.Local)
	if err != nil {
		return nil, nil, nil, err
	}
	pa, err := netip.ParseAddrPort(s.Peer)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.Sockets < 1 || int(la.Port())+s.Sockets > 1<<16 || int(pa.Port())+s.Sockets > 1<<16 {
		return nil, nil, nil, fmt.Errorf("role: %d sockets from ports %d and %d", s.Sockets, la.Port(), pa.Port())
	}
	mode, err := idle.ParseMode(s.Wait)
	if err != nil {
		return nil, nil, nil, err
	}
	unlock, err := idle.LockThread(-1)
	if err != nil {
		return nil, nil, nil, err
	}
	done = func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
		unlock()
	}
	for i := range s.Sockets {
		fd, err := dgramSocket(port(la, i), port(pa, i))
		if err != nil {
			done()
			return nil, nil, nil, err
		}
		fds = append(fds, fd)
	}
	return fds, idle.NewIdler(idle.Strategy{Mode: mode}, nil, fds...), done, nil
}

func port(a netip.AddrPort, i int) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr(), a.Port()+uint16(i))
}

// dgramSocket is a non-blocking UDP socket bound to local, connected to
// peer.
func dgramSocket(local, peer netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(local.Port()), Addr: local.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("bind", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(peer.Port()), Addr: peer.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("connect", err)
	}
	return fd, nil
}

// recvReady takes a datagram from fd into buf if one is there.
func recvReady(fd int, buf []byte) (bool, error) {
	n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
	switch {
	case n > 0:
		return true, nil
	case err == nil, errors.Is(err, unix.EAGAIN), errors.Is(err, unix.ECONNREFUSED):
		return false, nil // ECONNREFUSED: the other end was not there yet
	}
	return false, os.NewSyscallError("recvfrom", err)
}

// dgramsEcho sends every datagram back on its socket until stdin closes.
func dgramsEcho(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	fds, d, done, err := dgramsEnds(s)
	if err != nil {
		return err
	}
	defer done()
	if err := say(out, LineReady); err != nil {
		return err
	}
	buf := make([]byte, max(s.Record, 8))
	for polls := 0; ; polls++ {
		d.Round()
		found := false
		for _, fd := range fds {
			ok, err := recvReady(fd, buf)
			if err != nil {
				return err
			}
			if ok {
				found = true
				if err := unix.Send(fd, buf[:max(s.Record, 8)], 0); err != nil && !errors.Is(err, unix.ECONNREFUSED) {
					return os.NewSyscallError("send", err)
				}
			}
		}
		if found {
			d.Busy(time.Now())
			continue
		}
		if polls%256 == 255 {
			select {
			case <-gone:
				return nil
			default:
			}
		}
		d.Idle(10 * time.Millisecond)
	}
}

// dgramsPing is the pinger's state: a datagram in flight on every socket.
type dgramsPing struct {
	fds     []int
	d       *idle.Idler
	hs      []hist.Hist
	all     hist.Hist
	sent    []time.Time
	pending []bool
	round   uint64
	buf     []byte
}

// dgramsPinger times each socket's round trip with a datagram in flight
// on every socket at once, after WarmUp rounds (at most WarmUpMax of
// them), for Samples rounds (at most Limit of them).
func dgramsPinger(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	fds, d, done, err := dgramsEnds(s)
	if err != nil {
		return err
	}
	defer done()
	n := len(fds)
	pg := &dgramsPing{fds: fds, d: d, hs: make([]hist.Hist, n), sent: make([]time.Time, n),
		pending: make([]bool, n), buf: make([]byte, max(s.Record, 8))}
	if err := warmUp(s, func(first bool) error { return pg.exchange(first, false) }); err != nil {
		return err
	}
	round := func(first bool) error { return pg.exchange(first, true) }
	if err := measureRounds(s, out, &pg.all, pg.hs, round, s.WarmUp == 0); err != nil {
		return err
	}
	return awaitGone(gone)
}

// exchange sends a datagram stamped with the round on every socket and
// waits for every echo (FirstEchoWait for the very first round, else
// EchoWait; a first datagram the echo's socket refused is sent again),
// recording each socket's round trip when record is set.
func (pg *dgramsPing) exchange(first, record bool) error {
	pg.round++
	binary.LittleEndian.PutUint64(pg.buf, pg.round)
	for i, fd := range pg.fds {
		pg.sent[i], pg.pending[i] = time.Now(), true
		if err := unix.Send(fd, pg.buf, 0); err != nil && !(first && errors.Is(err, unix.ECONNREFUSED)) {
			return os.NewSyscallError("send", err)
		}
	}
	wait := EchoWait
	if first {
		wait = FirstEchoWait
	}
	deadline := time.Now().Add(wait)
	for polls, left := 0, len(pg.fds); left > 0; polls++ {
		pg.d.Round()
		found, err := pg.take(record)
		if err != nil {
			return err
		}
		left -= found
		if found > 0 {
			pg.d.Busy(time.Now())
			continue
		}
		if polls%256 == 255 {
			if time.Now().After(deadline) {
				return fmt.Errorf("no echo on %d of %d sockets within %v", left, len(pg.fds), wait)
			}
			if first {
				pg.resend() // the echo's socket may not have been bound yet
			}
		}
		pg.d.Idle(0)
	}
	return nil
}

// take reads the echoes there are, recording those of this round;
// found counts the sockets whose echo came.
func (pg *dgramsPing) take(record bool) (found int, err error) {
	for i, fd := range pg.fds {
		if !pg.pending[i] {
			continue
		}
		ok, err := recvReady(fd, pg.buf)
		if err != nil {
			return found, err
		}
		if !ok || binary.LittleEndian.Uint64(pg.buf) != pg.round {
			continue // an older round's echo (resent) is skipped
		}
		pg.pending[i] = false
		found++
		if record {
			d := time.Since(pg.sent[i])
			pg.hs[i].Record(d)
			pg.all.Record(d)
		}
	}
	return found, nil
}

// resend sends this round's datagram again on every socket still waiting.
func (pg *dgramsPing) resend() {
	binary.LittleEndian.PutUint64(pg.buf, pg.round)
	for i, fd := range pg.fds {
		if pg.pending[i] {
			unix.Send(fd, pg.buf, 0)
		}
	}
}
