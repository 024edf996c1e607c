package netpoll_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netpoll"
	"github.com/ringfire/ringfire/internal/testenv"
)

var errShut = errors.New("test: closed")

// newPoller returns a Poller of a pipe's read end whose ready reports
// ready, and the pipe's read and write ends.
func newPoller(t *testing.T, ready *atomic.Bool) (p *netpoll.Poller, rd, wr int) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	p, err := netpoll.NewPoller(fds[:1], "test-pipe", ready.Load, errShut)
	if err != nil {
		t.Fatalf("NewPoller: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p, fds[0], fds[1]
}

// WaitFor returns false when its time passes, true when the sockets are
// ready once the descriptor is readable, true when woken holds after a
// Wake, and the closed error after Close.
func TestPoller(t *testing.T) {
	var ready, woken atomic.Bool
	p, _, wr := newPoller(t, &ready)
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

// The sockets are in an epoll instance only while WaitFor waits: between
// waits, a frame wakes no thread.
func TestPollerArmsOnlyWhileWaiting(t *testing.T) {
	var ready, woken atomic.Bool
	p, rd, wr := newPoller(t, &ready)
	if testenv.Polled(t)[rd] {
		t.Fatalf("descriptor %d watched before any wait", rd)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.WaitFor(10*time.Second, woken.Load)
		done <- err
	}()
	testenv.Until(t, 10*time.Second, "the waiting poller's descriptor in an epoll instance", func() bool { return testenv.Polled(t)[rd] })
	ready.Store(true)
	if _, err := unix.Write(wr, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done); err != nil {
		t.Fatalf("WaitFor: %v", err)
	}
	if testenv.Polled(t)[rd] {
		t.Fatalf("descriptor %d still watched after the wait", rd)
	}
}

// WaitWoken leaves the sockets alone: readable and ready, they neither
// end it nor enter an epoll instance; its time passing ends it with
// false, and a Wake with woken true ends it with true.
func TestWaitWokenIgnoresTheSockets(t *testing.T) {
	var ready, woken atomic.Bool
	p, rd, wr := newPoller(t, &ready)
	ready.Store(true)
	if _, err := unix.Write(wr, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.WaitWoken(20*time.Millisecond, woken.Load); ok || err != nil {
		t.Fatalf("WaitWoken(20 ms) with the sockets ready = %v, %v; want false, nil", ok, err)
	}
	checked := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		ok, err := p.WaitWoken(-1, func() bool {
			select {
			case checked <- struct{}{}:
			default:
			}
			return woken.Load()
		})
		if err == nil && !ok {
			err = errors.New("WaitWoken(-1) returned false")
		}
		done <- err
	}()
	<-checked // the wait has begun
	if testenv.Polled(t)[rd] {
		t.Fatalf("descriptor %d in an epoll instance during WaitWoken", rd)
	}
	woken.Store(true)
	p.Wake()
	if err := within(t, done); err != nil {
		t.Fatalf("WaitWoken woken: %v", err)
	}
}
