package idle

// Cross-process UDP ping-pong on loopback, each side waiting for the next
// datagram in one style: the datagram-alone round trip that replication
// latency is measured against. The echo child is this test binary, run
// again with pingEnv set.

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/ipcbench"
)

const pingEnv = "RINGFIRE_IDLE_ECHO" // the echo child's wait style

func TestMain(m *testing.M) {
	if style := os.Getenv(pingEnv); style != "" {
		if err := echoMain(style); err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// endpoint receives and sends 64-byte datagrams on a connected UDP socket.
type endpoint struct {
	f    *os.File // keeps fd open (its finalizer would close it)
	fd   int
	conn *net.UDPConn // style "netpoller"
	d    *Idler       // the other styles
	buf  [64]byte
}

func newEndpoint(f *os.File, style string) (*endpoint, error) {
	if style == "netpoller" {
		pc, err := net.FilePacketConn(f)
		if err != nil {
			return nil, err
		}
		return &endpoint{conn: pc.(*net.UDPConn)}, nil
	}
	m, err := ParseMode(style)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	return &endpoint{f: f, fd: fd, d: NewIdler(Strategy{Mode: m}, nil, fd)}, nil
}

func (e *endpoint) send() error {
	if e.conn != nil {
		_, err := e.conn.Write(e.buf[:])
		return err
	}
	_, err := unix.Write(e.fd, e.buf[:])
	return err
}

// recv waits for one datagram, at most 5 s.
func (e *endpoint) recv() error {
	if e.conn != nil {
		e.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := e.conn.Read(e.buf[:])
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		e.d.Round()
		n, _, err := unix.Recvfrom(e.fd, e.buf[:], unix.MSG_DONTWAIT)
		if n > 0 {
			e.d.Busy(time.Now())
			return nil
		}
		if err != nil && err != unix.EAGAIN {
			return err
		}
		if i&255 == 255 && time.Now().After(deadline) {
			return os.ErrDeadlineExceeded
		}
		e.d.Idle(10 * time.Millisecond)
	}
}

func echoMain(style string) error {
	if style != "netpoller" {
		unlock, err := LockThread(-1)
		if err != nil {
			return err
		}
		defer unlock()
	}
	e, err := newEndpoint(os.NewFile(3, "echo"), style)
	if err != nil {
		return err
	}
	for {
		if err := e.recv(); err != nil {
			return err
		}
		if err := e.send(); err != nil {
			return err
		}
	}
}

// udpPair makes two connected loopback UDP sockets.
func udpPair(tb testing.TB) (parent, child *os.File) {
	tb.Helper()
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := net.DialUDP("udp4", nil, a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		tb.Fatal(err)
	}
	// Connect a to b as well, so both ends read and write plainly.
	bp := b.LocalAddr().(*net.UDPAddr).AddrPort()
	rc, err := a.SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	var cerr error
	rc.Control(func(fd uintptr) {
		cerr = unix.Connect(int(fd), &unix.SockaddrInet4{Port: int(bp.Port()), Addr: bp.Addr().As4()})
	})
	if cerr != nil {
		tb.Fatal(cerr)
	}
	pf, _ := a.File()
	cf, _ := b.File()
	a.Close()
	b.Close()
	return pf, cf
}

// startEcho starts an echo child waiting in style and returns the
// parent's end; the calling goroutine's thread is locked for the test
// unless the style is the netpoller.
func startEcho(tb testing.TB, style string) *endpoint {
	tb.Helper()
	if style != "netpoller" {
		unlock, err := LockThread(-1)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(unlock)
	}
	pf, cf := udpPair(tb)
	child, err := ipcbench.StartChild([]string{os.Args[0], "-test.run=^$"}, []string{pingEnv + "=" + style}, []*os.File{cf})
	cf.Close()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		pf.Close()
		child.Stop(time.Second)
		if tb.Failed() {
			tb.Logf("echo child: %s", child.Output())
		}
	})
	e, err := newEndpoint(pf, style)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

var pingStyles = []string{"netpoller", "block", "adaptive", "yield", "spin"}

// BenchmarkUDPPingPong: one 64-byte datagram to an echo process and back,
// both sides waiting in the same style.
func BenchmarkUDPPingPong(b *testing.B) {
	for _, style := range pingStyles {
		b.Run(style, func(b *testing.B) {
			e := startEcho(b, style)
			b.ResetTimer()
			for range b.N {
				if err := e.send(); err != nil {
					b.Fatal(err)
				}
				if err := e.recv(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Every style carries a few hundred round trips to a real echo process.
func TestUDPPingPong(t *testing.T) {
	for _, style := range pingStyles {
		t.Run(style, func(t *testing.T) {
			e := startEcho(t, style)
			for i := range 300 {
				e.buf[0] = byte(i)
				if err := e.send(); err != nil {
					t.Fatal(err)
				}
				if err := e.recv(); err != nil {
					t.Fatalf("round trip %d: %v", i, err)
				}
				if e.buf[0] != byte(i) {
					t.Fatalf("round trip %d: echo carries %d", i, e.buf[0])
				}
			}
		})
	}
}
