package ipcbench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Link is the parent's half of a transport to an echo child, between its
// creation and the child's connection. The parent hands ChildFiles (as
// exec.Cmd.ExtraFiles, so they become descriptors 3 and up) or Addr to the
// child, starts it, then calls Connect.
type Link struct {
	t      Transport
	client *Client    // unix, pipe: ready at once; tcp: after Connect
	child  []*os.File // the child's ends, closed here by Connect or Close
	ln     *net.TCPListener
}

// NewLink creates a transport of kind t: a socketpair, two pipes, or a TCP
// listener on 127.0.0.1 with an ephemeral port.
func NewLink(t Transport) (*Link, error) {
	l := &Link{t: t}
	switch t {
	case Unix:
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("ipcbench: socketpair: %w", err)
		}
		pf := os.NewFile(uintptr(fds[0]), "ipcbench-unix-parent")
		cf := os.NewFile(uintptr(fds[1]), "ipcbench-unix-child")
		conn, err := net.FileConn(pf) // a dup, non-blocking, on the netpoller
		pf.Close()
		if err != nil {
			cf.Close()
			return nil, fmt.Errorf("ipcbench: unix socket: %w", err)
		}
		l.client = newClient(conn, conn, conn)
		l.child = []*os.File{cf}
	case Pipe:
		cr, pw, err := os.Pipe() // parent → child
		if err != nil {
			return nil, fmt.Errorf("ipcbench: pipe: %w", err)
		}
		pr, cw, err := os.Pipe() // child → parent
		if err != nil {
			cr.Close()
			pw.Close()
			return nil, fmt.Errorf("ipcbench: pipe: %w", err)
		}
		l.client = newClient(pr, pw, pw, pr)
		l.child = []*os.File{cr, cw}
	case TCP:
		ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, fmt.Errorf("ipcbench: tcp listen: %w", err)
		}
		l.ln = ln
	default:
		return nil, fmt.Errorf("ipcbench: unknown transport %q", t)
	}
	return l, nil
}

// Transport is the link's kind.
func (l *Link) Transport() Transport { return l.t }

// ChildFiles are the child's ends of a unix or pipe link, in descriptor
// order (3, then 4): the socket; or the read end of the parent-to-child
// pipe and the write end of the child-to-parent pipe. Nil for TCP.
func (l *Link) ChildFiles() []*os.File { return l.child }

// Addr is the address the child dials for a TCP link ("" otherwise).
func (l *Link) Addr() string {
	if l.ln == nil {
		return ""
	}
	return l.ln.Addr().String()
}

// Connect completes the link once the child has been started: it closes
// the parent's copies of the child's ends (so that the child's exit is seen
// as end of file) and, for TCP, accepts the child's connection within
// timeout and sets TCP_NODELAY. The Client then belongs to the caller.
func (l *Link) Connect(timeout time.Duration) (*Client, error) {
	var errs []error
	for _, f := range l.child {
		errs = append(errs, f.Close())
	}
	l.child = nil
	if l.ln != nil {
		ln := l.ln
		l.ln = nil
		conn, err := acceptTCP(ln, timeout)
		errs = append(errs, err, ln.Close())
		if conn != nil {
			l.client = newClient(conn, conn, conn)
		}
	}
	c := l.client
	l.client = nil
	if err := errors.Join(errs...); err != nil {
		if c != nil {
			c.Close()
		}
		return nil, err
	}
	return c, nil
}

func acceptTCP(ln *net.TCPListener, timeout time.Duration) (*net.TCPConn, error) {
	if err := ln.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	conn, err := ln.AcceptTCP()
	if err != nil {
		return nil, fmt.Errorf("ipcbench: accept the echo child's connection: %w", err)
	}
	if err := conn.SetNoDelay(true); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Close releases whatever Connect has not handed over: the child's ends,
// the listener, the client. It is safe after Connect and twice.
func (l *Link) Close() error {
	var errs []error
	for _, f := range l.child {
		errs = append(errs, f.Close())
	}
	l.child = nil
	if l.ln != nil {
		errs = append(errs, l.ln.Close())
		l.ln = nil
	}
	if l.client != nil {
		errs = append(errs, l.client.Close())
		l.client = nil
	}
	return errors.Join(errs...)
}

// Serve runs the echo side of transport t in this process, over files (the
// child's ends as ChildFiles returns them, or as inherited) or, for TCP, a
// connection dialled to addr with TCP_NODELAY. It works on duplicates of
// files, which the caller still owns. It returns the number of messages
// echoed when the parent closes its end, or an error; every read, write
// and the dial are bounded by deadline.
func Serve(t Transport, files []*os.File, addr string, deadline time.Time) (uint64, error) {
	var (
		r       io.Reader
		w       io.Writer
		closers []io.Closer
	)
	switch t {
	case Unix:
		if len(files) < 1 {
			return 0, errors.New("ipcbench: serve unix: no socket")
		}
		conn, err := net.FileConn(files[0])
		if err != nil {
			return 0, fmt.Errorf("ipcbench: serve unix: %w", err)
		}
		r, w, closers = conn, conn, []io.Closer{conn}
	case Pipe:
		if len(files) < 2 {
			return 0, errors.New("ipcbench: serve pipe: want two pipe ends")
		}
		pr, err := pollable(files[0])
		if err != nil {
			return 0, err
		}
		pw, err := pollable(files[1])
		if err != nil {
			pr.Close()
			return 0, err
		}
		r, w, closers = pr, pw, []io.Closer{pw, pr}
	case TCP:
		d := net.Dialer{Deadline: deadline}
		conn, err := d.Dial("tcp4", addr)
		if err != nil {
			return 0, fmt.Errorf("ipcbench: serve tcp: %w", err)
		}
		if err := conn.(*net.TCPConn).SetNoDelay(true); err != nil {
			conn.Close()
			return 0, fmt.Errorf("ipcbench: serve tcp: %w", err)
		}
		r, w, closers = conn, conn, []io.Closer{conn}
	default:
		return 0, fmt.Errorf("ipcbench: unknown transport %q", t)
	}
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, x := range closers {
		if err := x.(interface{ SetDeadline(time.Time) error }).SetDeadline(deadline); err != nil {
			return 0, fmt.Errorf("ipcbench: serve %s: %w", t, err)
		}
	}
	return Echo(r, w)
}

// pollable duplicates f's descriptor in non-blocking mode, so that the new
// file runs on the netpoller and honours deadlines.
func pollable(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("ipcbench: %s: %w", f.Name(), err)
	}
	nfd := -1
	var derr error
	if err := sc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = e
			return
		}
		nfd = int(r)
	}); err != nil {
		return nil, fmt.Errorf("ipcbench: %s: %w", f.Name(), err)
	}
	if derr != nil {
		return nil, fmt.Errorf("ipcbench: dup %s: %w", f.Name(), derr)
	}
	if err := syscall.SetNonblock(nfd, true); err != nil {
		syscall.Close(nfd)
		return nil, fmt.Errorf("ipcbench: %s: set non-blocking: %w", f.Name(), err)
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// ServeChild is Serve in an echo child process: the child's ends are its
// inherited descriptors 3 (unix: the socket; pipe: the read end) and 4
// (pipe: the write end); TCP dials addr.
func ServeChild(t Transport, addr string, deadline time.Time) (uint64, error) {
	var n int
	switch t {
	case Unix:
		n = 1
	case Pipe:
		n = 2
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i := range n {
		fd := 3 + i
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return 0, fmt.Errorf("ipcbench: serve %s: descriptor %d was not inherited: %w", t, fd, err)
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("ipcbench-child-fd%d", fd)))
	}
	return Serve(t, files, addr, deadline)
}
