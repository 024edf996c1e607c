package netpoll_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netpoll"
)

var errShut = errors.New("test: closed")

// newPoller returns a Poller of a pipe's read end whose ready reports
// ready, and the pipe's write end.
func newPoller(t *testing.T, ready *atomic.Bool) (*netpoll.Poller, int) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	rd, err := netpoll.Dup(fds[0])
	unix.Close(fds[0])
	if err != nil {
		t.Fatalf("Dup: %v", err)
	}
	p, err := netpoll.NewPoller(rd, "test-pipe", ready.Load, errShut)
	if err != nil {
		t.Fatalf("NewPoller: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p, fds[1]
}

// WaitFor returns false when its time passes, true when the sockets are
// ready once the descriptor is readable, true when woken holds after a
// Wake, and the closed error after Close.
func TestPoller(t *testing.T) {
	var ready, woken atomic.Bool
	p, wr := newPoller(t, &ready)
	if ok, err := p.WaitFor(time.Millisecond, woken.Load); ok || err != nil {
		t.Fatalf("WaitFor(1 ms) with nothing ready = %v, %v; want false, nil", ok, err)
	}

	ready.Store(true)
	if _, err := unix.Write(wr, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.WaitFor(10*time.Second, woken.Load); !ok || err != nil {
		t.Fatalf("WaitFor with the sockets ready = %v, %v; want true, nil", ok, err)
	}
	ready.Store(false)

	done := make(chan error, 1)
	go func() {
		ok, err := p.WaitFor(-1, woken.Load)
		if err == nil && !ok {
			err = errors.New("WaitFor(-1) returned false")
		}
		done <- err
	}()
	woken.Store(true)
	p.Wake()
	if err := within(t, done); err != nil {
		t.Fatalf("WaitFor woken: %v", err)
	}

	woken.Store(false)
	go func() {
		_, err := p.WaitFor(-1, woken.Load)
		done <- err
	}()
	p.Close()
	if err := within(t, done); !errors.Is(err, errShut) {
		t.Fatalf("WaitFor after Close: %v, want the closed error", err)
	}
}

func within(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor did not return within 10 s")
		return nil
	}
}
