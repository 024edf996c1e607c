package ipcbench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// MsgSize is the size of every benchmark message: one 64-byte cache line,
// the slot stride of a ring of 56-byte records.
const MsgSize = 64

// Transport names a kernel IPC mechanism.
type Transport string

// The transports of the round-trip benchmarks.
const (
	Unix Transport = "unix" // AF_UNIX SOCK_STREAM socketpair
	Pipe Transport = "pipe" // two pipes, one each way
	TCP  Transport = "tcp"  // TCP over 127.0.0.1 with TCP_NODELAY
)

// Transports lists every transport, in the order benchmarks report them.
func Transports() []Transport { return []Transport{Unix, Pipe, TCP} }

func (t Transport) valid() bool { return t == Unix || t == Pipe || t == TCP }

// MismatchError reports an echo that differs from the message sent.
type MismatchError struct {
	Seq       uint64
	Sent, Got [MsgSize]byte
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("ipcbench: echo of message %d differs:\n sent % x\n  got % x", e.Seq, e.Sent, e.Got)
}

// Client is the parent's end of an echo link. It is used by one goroutine
// at a time.
type Client struct {
	r       io.Reader
	w       io.Writer
	closers []io.Closer // writer side first, so the peer sees EOF promptly
	dl      []interface{ SetDeadline(time.Time) error }
	seq     uint64
	out, in [MsgSize]byte
}

func newClient(r io.Reader, w io.Writer, closers ...io.Closer) *Client {
	c := &Client{r: r, w: w, closers: closers}
	for i := range c.out {
		c.out[i] = byte(0xA5 ^ i)
	}
	for _, x := range []any{r, w} {
		if d, ok := x.(interface{ SetDeadline(time.Time) error }); ok {
			c.dl = append(c.dl, d)
		}
	}
	return c
}

// Seq is the sequence number of the last message sent (0 before the first).
func (c *Client) Seq() uint64 { return c.seq }

// SetDeadline bounds every later read and write of the link: past t they
// fail with a timeout instead of blocking.
func (c *Client) SetDeadline(t time.Time) error {
	var errs []error
	for _, d := range c.dl {
		errs = append(errs, d.SetDeadline(t))
	}
	return errors.Join(errs...)
}

// RoundTrip sends the next message (its sequence number in the first eight
// bytes, the complement in the last eight, a fixed pattern between), reads
// exactly MsgSize bytes back and compares all of them with what was sent.
// It does not allocate unless it fails.
func (c *Client) RoundTrip() error {
	c.seq++
	binary.LittleEndian.PutUint64(c.out[0:], c.seq)
	binary.LittleEndian.PutUint64(c.out[MsgSize-8:], ^c.seq)
	if _, err := c.w.Write(c.out[:]); err != nil {
		return fmt.Errorf("ipcbench: send message %d: %w", c.seq, err)
	}
	if _, err := io.ReadFull(c.r, c.in[:]); err != nil {
		return fmt.Errorf("ipcbench: receive echo of message %d: %w", c.seq, err)
	}
	if c.in != c.out {
		return &MismatchError{Seq: c.seq, Sent: c.out, Got: c.in}
	}
	return nil
}

// Close closes the parent's ends (the writing end first), which makes the
// echo peer see end of file and stop.
func (c *Client) Close() error {
	var errs []error
	for _, x := range c.closers {
		errs = append(errs, x.Close())
	}
	c.closers = nil
	return errors.Join(errs...)
}

// Echo reads MsgSize-byte messages from r and writes each back to w
// unchanged until r reports end of file at a message boundary, which is a
// clean stop. It returns the number of messages echoed. A partial message,
// a read or a write error ends it with an error. Bound it with deadlines on
// r and w (Serve does).
func Echo(r io.Reader, w io.Writer) (uint64, error) {
	var buf [MsgSize]byte
	var n uint64
	for {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			if err == io.EOF {
				return n, nil
			}
			return n, fmt.Errorf("ipcbench: echo: read message %d: %w", n+1, err)
		}
		if _, err := w.Write(buf[:]); err != nil {
			return n, fmt.Errorf("ipcbench: echo: write message %d: %w", n+1, err)
		}
		n++
	}
}
