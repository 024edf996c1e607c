package replica

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// rawPair is a loopback TCP connection whose near end is detached from
// Go's poller (the far end stays a net.Conn).
func rawPair(t *testing.T) (*rawConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	near, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	far := <-accepted
	if far == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { far.Close() })
	rc, err := detach(near.(*net.TCPConn), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc, far
}

// A peer that never reads: the write stops at its deadline, with a
// timeout error, having written what the buffers took.
func TestRawConnWriteDeadline(t *testing.T) {
	rc, _ := rawPair(t)
	rc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	big := make([]byte, 64<<20)
	n, err := rc.Write(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 || n == len(big) {
		t.Fatalf("Write to a peer that never reads = %d of %d, %v; want part of it and a deadline error", n, len(big), err)
	}
}

// Close wakes a write blocked on a full socket (no deadline), and later
// calls fail as on a closed net.Conn.
func TestRawConnCloseWakesWrite(t *testing.T) {
	rc, _ := rawPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := rc.Write(make([]byte, 64<<20))
		done <- err
	}()
	rc.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a write cut off by Close succeeded")
		}
	case <-time.After(10 * time.Second): // a bound, not a wait: Close must wake it at once
		t.Fatal("Close left the write blocked")
	}
	if _, err := rc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
	if _, err := rc.readNow(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after Close: %v, want net.ErrClosed", err)
	}
}

// readNow never waits; Read waits for bytes up to its deadline.
func TestRawConnRead(t *testing.T) {
	rc, far := rawPair(t)
	buf := make([]byte, 8)
	if _, err := rc.readNow(buf); err != errAgain {
		t.Fatalf("readNow with nothing sent: %v, want errAgain", err)
	}
	if _, err := far.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	rc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := rc.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	rc.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := rc.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v", err)
	}
	far.Close()
	rc.SetReadDeadline(time.Time{})
	if _, err := rc.Read(buf); err == nil {
		t.Fatal("Read after the peer closed succeeded")
	}
}

// readNow allocates nothing, with bytes or without.
func TestRawConnReadAllocs(t *testing.T) {
	rc, far := rawPair(t)
	buf := make([]byte, 64)
	if n := testing.AllocsPerRun(100, func() { rc.readNow(buf) }); n != 0 {
		t.Fatalf("readNow with nothing there: %v allocations", n)
	}
	far.Write(make([]byte, 64*100))
	if n := testing.AllocsPerRun(100, func() { rc.readNow(buf) }); n != 0 {
		t.Fatalf("readNow with bytes: %v allocations", n)
	}
}
