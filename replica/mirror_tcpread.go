package replica

import (
	"bufio"
	"errors"
	"io"
	"net"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/replica/wire"
)

// tcpReader splits the control stream into frames for a mirror's run loop
// that reads its socket itself (direct mode: a plain TCP connection
// without datagrams; on a Loop too, whose turns step such a mirror every
// time). No reader goroutine, no queue, no wake-up stands between the
// socket and the loop, which sleeps in ppoll on the socket. It is used by
// the run loop's goroutine only (the Loop's, on a Loop).
type tcpReader struct {
	src    func(p []byte) (int, error) // reads what is there without blocking: errAgain when nothing is
	fd     int                         // the socket, for the loop's ppoll (-1: none)
	buf    []byte
	r, w   int // the unread bytes are buf[r:w]
	maxLen int // a frame's payload limit
	err    error
}

// errAgain is what a tcpReader's src returns when nothing is there to
// read now.
var errAgain = errors.New("replica: nothing to read")

// directRcvBuf is the receive buffer a direct reader asks its socket for
// (SO_RCVBUFFORCE where permitted, else SO_RCVBUF up to rmem_max): with no
// reader goroutine reading ahead (up to 256 frames of 64 KiB), the kernel
// holds a burst while the loop is busy.
const directRcvBuf = 8 << 20

// tcpReadBuf is a direct reader's buffer size; below a quarter of it
// free at its end, the unread bytes move to the front before a read.
const tcpReadBuf = 256 << 10

// newTCPReader reads frames of at most maxLen payload bytes from src into a
// buffer of size bytes (it grows for a larger frame), starting with pre
// (what a handshake's buffered reader read ahead).
func newTCPReader(src func([]byte) (int, error), fd, maxLen, size int, pre []byte) *tcpReader {
	t := &tcpReader{src: src, fd: fd, maxLen: maxLen, buf: make([]byte, max(size, len(pre), wire.HeaderSize))}
	t.w = copy(t.buf, pre)
	return t
}

// directReader is the direct reader of a plain TCP or Unix stream
// connection, with the connection moved out of Go's poller (rawConn,
// which the caller uses in tcp's place from then on); nil for any other
// (TLS) connection, or if the socket could not be moved. It takes what br
// buffered past the handshake.
func directReader(tcp net.Conn, br *bufio.Reader, maxLen int) (*tcpReader, *rawConn) {
	tc, ok := plainSocket(tcp)
	if !ok {
		return nil, nil
	}
	pre, _ := br.Peek(br.Buffered()) // never reads: only what is buffered (newTCPReader copies it)
	rc, err := detach(tc, func(fd int) { setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, directRcvBuf) })
	if err != nil {
		return nil, nil
	}
	return newTCPReader(rc.readNow, rc.fd, maxLen, tcpReadBuf, pre), rc
}

// next returns the next whole frame, reading the socket when the buffer
// holds none; ok false and no error: none has arrived. The payload is a
// view of the buffer, valid until the next call. An error ends the stream:
// the peer's (a clean close between frames is ErrPeerClosed), or a frame
// that breaks the protocol.
func (t *tcpReader) next() (h wire.Header, p []byte, ok bool, err error) {
	for {
		if h, p, ok, err = t.frame(); ok || err != nil {
			return h, p, ok, err
		}
		if t.err != nil {
			if t.err == io.EOF && t.w > t.r {
				return h, nil, false, eofErr(io.ErrUnexpectedEOF)
			}
			return h, nil, false, eofErr(t.err)
		}
		if !t.fill() {
			return h, nil, false, nil
		}
	}
}

// frame takes the next whole frame the buffer holds; for one that is not
// whole yet, it makes room: the buffer grows for a frame larger than it,
// and the unread bytes move to the front for one that would run past its
// end.
func (t *tcpReader) frame() (wire.Header, []byte, bool, error) {
	if t.w-t.r < wire.HeaderSize {
		return wire.Header{}, nil, false, nil
	}
	h, err := wire.ParseHeader(t.buf[t.r:t.w], t.maxLen)
	if err != nil {
		return h, nil, false, err
	}
	size := wire.HeaderSize + int(h.Len)
	if t.w-t.r < size {
		switch {
		case size > len(t.buf):
			nb := make([]byte, size)
			t.w = copy(nb, t.buf[t.r:t.w])
			t.buf, t.r = nb, 0
		case t.r+size > len(t.buf):
			t.w = copy(t.buf, t.buf[t.r:t.w])
			t.r = 0
		}
		return h, nil, false, nil
	}
	p := t.buf[t.r+wire.HeaderSize : t.r+size]
	t.r += size
	return h, p, true, nil
}

// fill reads once into the buffer; it reports whether the read brought
// bytes or ended the stream (t.err).
func (t *tcpReader) fill() bool {
	if t.r == t.w {
		t.r, t.w = 0, 0
	} else if len(t.buf)-t.w < len(t.buf)/4 && t.r > 0 {
		t.w = copy(t.buf, t.buf[t.r:t.w])
		t.r = 0
	}
	if t.w == len(t.buf) { // a frame as large as the buffer, not yet whole
		return false
	}
	n, err := t.src(t.buf[t.w:])
	t.w += n
	switch {
	case err == errAgain:
		return n > 0
	case err != nil:
		t.err = err
		return true
	}
	return n > 0
}
