package role

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/internal/netpoll"
	"golang.org/x/sys/unix"
)

// DatagramStyles are the ways the two processes of the deployed
// datagram-alone round trip wait for the next datagram: Go's netpoller
// (net.UDPConn), or on a locked thread with internal/idle: block (ppoll,
// then recv), yield (sched_yield between non-blocking recvs) and spin.
var DatagramStyles = []string{"netpoller", "block", "yield", "spin"}

// dgramWait bounds one wait for a datagram.
const dgramWait = 2 * time.Second

// dgramEnd is one end of the datagram round trip: a UDP socket bound to
// its address and connected to the other end's.
type dgramEnd struct {
	conn *net.UDPConn // netpoller
	fd   int          // the other styles: a duplicate of the socket in no poller
	d    *idle.Idler
	buf  []byte
}

// openDgram opens an end for style; the caller of a style other than
// netpoller runs on a thread locked with idle.LockThread.
func openDgram(style, local, peer string, size int) (*dgramEnd, error) {
	la, err := netip.ParseAddrPort(local)
	if err != nil {
		return nil, err
	}
	pa, err := netip.ParseAddrPort(peer)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp4", net.UDPAddrFromAddrPort(la), net.UDPAddrFromAddrPort(pa))
	if err != nil {
		return nil, err
	}
	e := &dgramEnd{buf: make([]byte, size)}
	if style == "netpoller" {
		e.conn = c
		return e, nil
	}
	mode, err := idle.ParseMode(style)
	if err != nil {
		c.Close()
		return nil, err
	}
	e.fd, err = netpoll.Dup(c) // in no poller
	c.Close()
	if err != nil {
		return nil, err
	}
	e.d = idle.NewIdler(idle.Strategy{Mode: mode}, nil, e.fd)
	return e, nil
}

func (e *dgramEnd) close() {
	if e.conn != nil {
		e.conn.Close()
	} else {
		unix.Close(e.fd)
	}
}

func (e *dgramEnd) send() error {
	if e.conn != nil {
		_, err := e.conn.Write(e.buf)
		return err
	}
	return unix.Send(e.fd, e.buf, 0)
}

// recv takes the next datagram, waiting at most until deadline in the
// end's style.
func (e *dgramEnd) recv(deadline time.Time) error {
	if e.conn != nil {
		e.conn.SetReadDeadline(deadline)
		_, err := e.conn.Read(e.buf)
		return err
	}
	for polls := 0; ; polls++ {
		e.d.Round()
		switch n, _, err := unix.Recvfrom(e.fd, e.buf, unix.MSG_DONTWAIT); {
		case n > 0:
			e.d.Busy(time.Now())
			return nil
		case err != nil && !errors.Is(err, unix.EAGAIN):
			return os.NewSyscallError("recvfrom", err)
		}
		if polls%256 == 255 && time.Now().After(deadline) {
			return os.ErrDeadlineExceeded
		}
		e.d.Idle(min(time.Until(deadline), 10*time.Millisecond))
	}
}

// dgramRole opens a datagram role's end, its goroutine locked to its
// thread for every style but the netpoller's; done closes and unlocks.
func dgramRole(s Spec) (e *dgramEnd, done func(), err error) {
	unlock := func() {}
	if s.Wait != "netpoller" {
		if unlock, err = idle.LockThread(-1); err != nil {
			return nil, nil, err
		}
	}
	if e, err = openDgram(s.Wait, s.Local, s.Peer, s.Record); err != nil {
		unlock()
		return nil, nil, err
	}
	return e, func() { e.close(); unlock() }, nil
}

// dgramEcho sends every datagram back until stdin closes.
func dgramEcho(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	e, done, err := dgramRole(s)
	if err != nil {
		return err
	}
	defer done()
	if err := say(out, LineReady); err != nil {
		return err
	}
	for {
		select {
		case <-gone:
			return nil
		default:
		}
		err := e.recv(time.Now().Add(100 * time.Millisecond))
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case errors.Is(err, unix.ECONNREFUSED):
			continue // the pinger's socket was not there yet
		case err != nil:
			return err
		}
		if err := e.send(); err != nil {
			return err
		}
	}
}

// dgramPinger sends a datagram and waits for its echo, one in flight.
func dgramPinger(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	e, done, err := dgramRole(s)
	if err != nil {
		return err
	}
	defer done()
	ping := func(bool) (time.Duration, error) {
		start := time.Now()
		if err := e.send(); err != nil {
			return 0, err
		}
		if err := e.recv(start.Add(dgramWait)); err != nil {
			return 0, fmt.Errorf("no echo: %w", err)
		}
		return time.Since(start), nil
	}
	return pingLoop(s, out, gone, ping)
}
