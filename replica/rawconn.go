package replica

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// rawConn is a direct mirror's TCP connection once it is out of Go's
// poller: the socket is duplicated and the net.TCPConn closed, which takes
// it out of the runtime's epoll set. Left in it, every frame that arrives
// wakes the thread the runtime keeps in epoll_wait (any process with a
// goroutine parked on a socket has one), and that wake-up lands inside
// the sender's write(2) on the same host, which it lengthens. The run
// loop reads it without blocking (readNow) and sleeps in ppoll on it;
// writes (STATUS, NAK) wait in ppoll for room, up to the write deadline.
//
// A source's session on a Unix socket is one too, for another wake-up: a
// Unix stream tells its writer's socket there is room again each time the
// reader takes a frame, and an epoll set that holds that socket (Go's
// poller registers every socket for EPOLLOUT too) wakes its thread for
// each frame (TCP wakes none: it tells only a writer that found no room).
// Out of the poller, the session's goroutines wait in ppoll for what they
// wait for (POLLIN, or POLLOUT when the socket is full), which no other
// event wakes.
//
// ops guards fd: reads and writes hold it shared for their system calls,
// Close exclusively to close the descriptor, so that no call ever meets a
// descriptor number that was closed and reused. wmu orders whole writes
// (the status relay's and the run loop's frames never interleave).
type rawConn struct {
	ops    sync.RWMutex
	fd     int // -1 once closed (under ops held exclusively)
	wmu    sync.Mutex
	closed atomic.Bool // set by Close before the shutdown that wakes pollers
	once   sync.Once
	// rdl and wdl are the read and write deadlines in Unix nanoseconds (0:
	// none): stored by SetDeadline and friends, loaded by Read and Write.
	rdl, wdl      atomic.Int64
	local, remote net.Addr
}

// pollSlice bounds one ppoll of a blocked Read or Write, so a deadline
// set meanwhile is seen.
const pollSlice = 50 * time.Millisecond

// socketConn is a connection whose socket a hot thread may use itself: a
// *net.TCPConn, a *net.UnixConn (a stream) or a rawConn.
type socketConn interface {
	net.Conn
	SyscallConn() (syscall.RawConn, error)
}

// plainSocket is c as a socketConn when it is plain TCP or a Unix stream,
// in Go's poller or out of it (not TLS, not a pipe).
func plainSocket(c net.Conn) (socketConn, bool) {
	switch c := c.(type) {
	case *net.TCPConn:
		return c, true
	case *net.UnixConn:
		return c, true
	case *rawConn:
		return c, true
	}
	return nil, false
}

// detach moves tc's socket to a rawConn and closes tc (which takes its
// descriptor out of Go's poller); fn runs on the descriptor first.
func detach(tc socketConn, fn func(fd int)) (*rawConn, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	dup := func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) } // close-on-exec from the start
	if err := rc.Control(dup); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	if fn != nil {
		fn(fd)
	}
	c := &rawConn{fd: fd, local: tc.LocalAddr(), remote: tc.RemoteAddr()}
	tc.Close() // the duplicate keeps the socket open
	return c, nil
}

// readNow reads what the socket holds without waiting: errAgain when
// nothing is there (tcpReader's source).
func (c *rawConn) readNow(p []byte) (int, error) { return c.call(false, p) }

// writeNow is one non-blocking send (MSG_NOSIGNAL: a closed peer is
// EPIPE, not a signal).
func (c *rawConn) writeNow(p []byte) (int, error) { return c.call(true, p) }

// call is one non-blocking read or send on the descriptor (again after
// EINTR), with the descriptor held open; errAgain when it would block.
// It allocates nothing but its errors.
func (c *rawConn) call(write bool, p []byte) (int, error) {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.fd < 0 {
		return 0, net.ErrClosed
	}
	op := "read"
	if write {
		op = "write"
	}
	for {
		var n int
		var err error
		if write {
			n, err = unix.SendmsgN(c.fd, p, nil, nil, unix.MSG_NOSIGNAL)
		} else {
			n, err = unix.Read(c.fd, p)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errAgain
		case err != nil:
			return 0, os.NewSyscallError(op, err)
		case n == 0 && !write && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Read waits up to the read deadline for bytes (net.Conn; the run loop
// uses readNow).
func (c *rawConn) Read(p []byte) (int, error) {
	for {
		n, err := c.readNow(p)
		if err != errAgain {
			return n, err
		}
		if err := c.await(unix.POLLIN, &c.rdl); err != nil {
			return 0, err
		}
	}
}

// Write writes all of p, waiting for room up to the write deadline.
func (c *rawConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := 0
	for n < len(p) {
		k, err := c.writeNow(p[n:])
		n += k
		switch {
		case err == errAgain:
			if err := c.await(unix.POLLOUT, &c.wdl); err != nil {
				return n, err
			}
		case err != nil:
			return n, err
		}
	}
	return n, nil
}

// await sleeps in ppoll until the socket is ready for events, it is
// closed, or the deadline in dl passes (os.ErrDeadlineExceeded, as a
// net.Conn's).
func (c *rawConn) await(events int16, dl *atomic.Int64) error {
	for {
		if c.closed.Load() {
			return net.ErrClosed
		}
		wait := pollSlice
		if d := dl.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			wait = min(wait, left)
		}
		if ready, err := c.poll(events, wait); ready || err != nil {
			return err
		}
	}
}

// poll is one bounded ppoll on the socket.
func (c *rawConn) poll(events int16, wait time.Duration) (bool, error) {
	c.ops.RLock()
	defer c.ops.RUnlock()
	if c.fd < 0 {
		return false, net.ErrClosed
	}
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: events}}
	ts := unix.NsecToTimespec(wait.Nanoseconds())
	n, err := unix.Ppoll(fds, &ts, nil)
	if err != nil && err != unix.EINTR {
		return false, os.NewSyscallError("ppoll", err)
	}
	return n > 0, nil
}

// Close shuts the socket down, which wakes a Read or Write in ppoll, then
// closes the descriptor once no call uses it. Safe from any goroutine,
// more than once.
func (c *rawConn) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		c.ops.RLock()
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
		c.ops.RUnlock()
		c.ops.Lock()
		unix.Close(c.fd)
		c.fd = -1
		c.ops.Unlock()
	})
	return nil
}

func (c *rawConn) LocalAddr() net.Addr  { return c.local }
func (c *rawConn) RemoteAddr() net.Addr { return c.remote }

func (c *rawConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *rawConn) SetReadDeadline(t time.Time) error {
	c.rdl.Store(unixNanoOrZero(t))
	return nil
}

func (c *rawConn) SetWriteDeadline(t time.Time) error {
	c.wdl.Store(unixNanoOrZero(t))
	return nil
}

// unixNanoOrZero is t in Unix nanoseconds, 0 for the zero time (none).
func unixNanoOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// SyscallConn gives the descriptor to a hot thread's direct write
// (session.writeDirect) as a net.Conn's would: f runs with the descriptor
// held open, again after a wait for the event it waits for when it
// returns false. Its writes do not take wmu: the caller orders them with
// the others (a session's owner: the writer or one sender, never both).
func (c *rawConn) SyscallConn() (syscall.RawConn, error) { return rawSys{c}, nil }

// rawSys is a rawConn's syscall.RawConn.
type rawSys struct{ c *rawConn }

func (r rawSys) Control(f func(fd uintptr)) error {
	r.c.ops.RLock()
	defer r.c.ops.RUnlock()
	if r.c.fd < 0 {
		return net.ErrClosed
	}
	f(uintptr(r.c.fd))
	return nil
}

func (r rawSys) Read(f func(fd uintptr) bool) error  { return r.until(f, unix.POLLIN, &r.c.rdl) }
func (r rawSys) Write(f func(fd uintptr) bool) error { return r.until(f, unix.POLLOUT, &r.c.wdl) }

func (r rawSys) until(f func(fd uintptr) bool, events int16, dl *atomic.Int64) error {
	for {
		done := false
		if err := r.Control(func(fd uintptr) { done = f(fd) }); err != nil || done {
			return err
		}
		if err := r.c.await(events, dl); err != nil {
			return err
		}
	}
}
