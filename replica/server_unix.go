package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A source can also listen on a Unix domain socket (ServerConfig.Unix),
// for mirrors on its own host: a mirror that dials "unix:PATH" gets
// everything over that stream, as a TCP-only mirror does, with the same
// frames. A local stream costs less per frame than loopback TCP (no ACKs,
// no TCP stack), and the same direct writes and reads apply to it. Its
// peers have no IP address: they never get datagrams, and
// MaxConnsPerAddr counts them all as one address. A Unix session's socket
// is out of Go's poller (rawconn.go), so its reading goroutine holds a
// thread in ppoll, which wakes every pollSlice (50 ms) to look at its
// deadline: 20 wake-ups a second per same-host mirror.

// UnixPrefix marks a MirrorConfig.Source that is a Unix socket path
// ("unix:/run/ringfire/a.sock"; "unix:@name" for the abstract namespace).
const UnixPrefix = "unix:"

// ErrNotSocket: ServerConfig.Unix names a file that is not a socket, which
// the server will not remove.
var ErrNotSocket = errors.New("replica: exists and is not a socket")

// ErrSocketInUse: another server listens on ServerConfig.Unix.
var ErrSocketInUse = errors.New("replica: a server already listens on the socket")

// UnixSocket is the socket path of a "unix:PATH" source, and whether
// source is one (MirrorConfig.Source).
func UnixSocket(source string) (path string, ok bool) {
	return strings.CutPrefix(source, UnixPrefix)
}

// listenUnix listens on path. A socket file left by a server that is gone
// (nobody accepts on it) is removed first; a live one is ErrSocketInUse,
// anything else at path ErrNotSocket. A path that starts with '@' is in
// the abstract namespace (no file). The listener removes its file when it
// closes.
func listenUnix(path string) (*net.UnixListener, error) {
	addr := &net.UnixAddr{Name: path, Net: "unix"}
	if strings.HasPrefix(path, "@") {
		return net.ListenUnix("unix", addr)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return net.ListenUnix("unix", addr)
	case err != nil:
		return nil, err
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("%s (%v): %w", path, fi.Mode().Type(), ErrNotSocket)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrSocketInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return net.ListenUnix("unix", addr)
}

// listen opens the Unix socket (ServerConfig.Unix, first: once the TCP
// address listens, both do) and the TCP control address.
func (s *Server) listen() (err error) {
	if s.cfg.Unix != "" {
		if s.unix, err = listenUnix(s.cfg.Unix); err != nil {
			return fmt.Errorf("replica: listen unix %s: %w", s.cfg.Unix, err)
		}
	}
	if s.ln, err = net.Listen("tcp", s.cfg.Bind); err != nil {
		if s.unix != nil {
			s.unix.Close()
		}
		return fmt.Errorf("replica: listen %s: %w", s.cfg.Bind, err)
	}
	s.accept = s.ln
	if s.unix != nil {
		s.accept = newFanIn(s.ln, s.unix)
	}
	return nil
}

// outOfPoller moves an accepted Unix connection out of Go's poller
// (rawconn.go: there, each frame the mirror took would wake the runtime's
// epoll thread); other connections stay as they are. On an error c is
// still the connection to close. What a Unix stream has in flight counts
// against the sender's buffer (the receiver's is not used), so the
// source's asks for directRcvBuf: it holds a burst while the mirror is
// busy, as a direct TCP mirror's receive buffer does.
func outOfPoller(c net.Conn) (net.Conn, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c, nil
	}
	rc, err := detach(uc, func(fd int) { setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, directRcvBuf) })
	if err != nil {
		return c, fmt.Errorf("replica: unix connection: %w", err)
	}
	return rc, nil
}

// fanIn accepts from several listeners as one: a goroutine per listener
// hands its connections (and the errors it recovers from) over an
// unbuffered channel, so a listener that fails keeps failing at the pace
// of the accept loop's back-off. Close closes every listener; Accept then
// returns net.ErrClosed, and a connection no Accept took is closed.
type fanIn struct {
	lns  []net.Listener
	got  chan accepted
	done chan struct{}
	once sync.Once
}

type accepted struct {
	c   net.Conn
	err error
}

func newFanIn(lns ...net.Listener) *fanIn {
	f := &fanIn{lns: lns, got: make(chan accepted), done: make(chan struct{})}
	for _, ln := range lns {
		go f.acceptFrom(ln)
	}
	return f
}

func (f *fanIn) acceptFrom(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case f.got <- accepted{c, err}:
		case <-f.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

func (f *fanIn) Accept() (net.Conn, error) {
	select {
	case a := <-f.got:
		return a.c, a.err
	case <-f.done:
		return nil, net.ErrClosed
	}
}

func (f *fanIn) Close() error {
	var err error
	f.once.Do(func() {
		close(f.done)
		for _, ln := range f.lns {
			err = errors.Join(err, ln.Close())
		}
	})
	return err
}

// Addr is the first listener's (the TCP control address).
func (f *fanIn) Addr() net.Addr { return f.lns[0].Addr() }
