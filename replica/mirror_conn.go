package replica

import (
	"bufio"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// tcpFrame is one frame read from the control connection.
type tcpFrame struct {
	h   wire.Header
	p   []byte // payload, a view of buf
	buf []byte
}

// conn is a mirror's connection to its source: the TCP control stream
// (read by a goroutine of its own and handed over frame by frame, or, in
// direct mode, read by the run loop itself: tcpReader) and, when the
// source sends datagrams, the datagram transport.
type conn struct {
	tcp    net.Conn
	br     *bufio.Reader
	frames chan tcpFrame
	free   chan []byte
	errc   chan error
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup

	// notify wakes the mirror's loop after the reader queued a frame or
	// its error (Mirror.notify; set before the reader starts).
	notify func()
	// direct, when set, is the run loop's own reader of tcp (a plain
	// connection without datagrams; the Loop's, on a Loop): no reader
	// goroutine runs, frames and errc stay empty.
	direct *tcpReader

	udp  Transport
	mc   wire.Multicast
	spec DatagramSpec
	// lineB is line B's MULTICAST when the source sends on two lines
	// (hasLineB; mirror_lines.go).
	lineB    wire.Multicast
	hasLineB bool
	// open checks the keyed source's datagrams, punchSeal seals our
	// PUNCHes (nil without a key); the mirror's loop uses both.
	open      *auth.Opener
	punchSeal *auth.Sealer
	// trailer: the source's datagrams end with its 64-bit session id sid
	// (the wide session, without a key).
	trailer bool
	sid     uint64

	// telemetry: the source takes STATUS; the run loop hands frames to
	// the status writer through status (the newest wins), in buffers
	// that the writer gives back through statusFree (statusBufs of them:
	// one being written, one queued, one being filled).
	telemetry  bool
	status     chan []byte
	statusFree chan []byte
	// statusRelay is the status writer (startStatus): the run loop kicks
	// it after queueing a STATUS; close closes it, which ends it.
	statusRelay *idle.Relay
	// reportOnAsk: the source acknowledged HelloReportOnAsk: STATUS comes
	// early only for a REPORT, once asked (its sequence; 0: none) is
	// applied (the run loop's).
	reportOnAsk bool
	asked       uint64
	lastStatus  time.Time
	reported    uint64 // Applied in the last STATUS

	// heard is when the run loop last handled a TCP frame of the source
	// (set as the connection is made; Mirror.checkSource).
	heard time.Time
}

const (
	tcpQueue   = 256      // frames read ahead of the mirror loop
	tcpBufSize = 64 << 10 // pooled frame buffer size
)

func newConn(tcp net.Conn) *conn {
	return &conn{tcp: tcp, br: bufio.NewReaderSize(tcp, 256<<10), frames: make(chan tcpFrame, tcpQueue),
		free: make(chan []byte, tcpQueue), errc: make(chan error, 1), done: make(chan struct{})}
}

// readFrame reads one frame synchronously (the handshake).
func (c *conn) readFrame(maxLen int) (wire.Header, []byte, error) { return readFrameFrom(c.br, maxLen) }

func (c *conn) startReader(maxLen int) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.errc <- c.readLoop(maxLen)
		c.notify()
	}()
}

// readLoop reads frames into pooled buffers and queues them.
func (c *conn) readLoop(maxLen int) error {
	var hb [wire.HeaderSize]byte
	for {
		if _, err := io.ReadFull(c.br, hb[:]); err != nil {
			return eofErr(err)
		}
		h, err := wire.ParseHeader(hb[:], maxLen)
		if err != nil {
			return err
		}
		buf := c.buffer(int(h.Len))
		if _, err := io.ReadFull(c.br, buf[:h.Len]); err != nil {
			return payloadErr(err)
		}
		select {
		case c.frames <- tcpFrame{h: h, p: buf[:h.Len], buf: buf}:
			c.notify()
		case <-c.done:
			return nil
		}
	}
}

func (c *conn) buffer(n int) []byte {
	select {
	case b := <-c.free:
		if cap(b) >= n {
			return b[:cap(b)]
		}
	default:
	}
	return make([]byte, max(n, tcpBufSize))
}

// release returns a frame's buffer to the pool.
func (c *conn) release(b []byte) {
	if cap(b) > tcpBufSize {
		return
	}
	select {
	case c.free <- b:
	default:
	}
}

// close ends the connection; the reader goroutine is waited for.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.tcp.Close()
		if c.statusRelay != nil {
			c.statusRelay.Close()
		}
		if c.udp != nil {
			c.udp.Close()
		}
		c.wg.Wait()
	})
}
