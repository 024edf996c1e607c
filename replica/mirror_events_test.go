package replica_test

// The mirror's event hook: failed attempts, connects and disconnects, on
// loopback TCP (no namespaces needed).

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// meRun runs a mirror of cfg until the test ends and returns the channel
// its events arrive on (events that find it full are dropped: a test
// waiting for one of those fails in meNext).
func meRun(t *testing.T, cfg replica.MirrorConfig) <-chan replica.MirrorEvent {
	t.Helper()
	events := make(chan replica.MirrorEvent, 64)
	cfg.Events = func(e replica.MirrorEvent) {
		select {
		case events <- e:
		default:
		}
	}
	m, err := replica.NewMirror(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return")
		}
		m.Close()
	})
	return events
}

// meNext returns the next event, failing the test after 10 s.
func meNext(t *testing.T, events <-chan replica.MirrorEvent) replica.MirrorEvent {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no mirror event within 10 s")
	}
	panic("unreachable")
}

// TestMirrorReportsFailedAttempts: a mirror pointed at a closed port
// reports every failed attempt, with the error and the backoff in use.
func TestMirrorReportsFailedAttempts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	const backoff = 5 * time.Millisecond
	events := meRun(t, replica.MirrorConfig{Source: addr, Ring: filepath.Join(t.TempDir(), "mirror"),
		TCPOnly: true, Reconnect: backoff})
	for i := range 3 {
		e := meNext(t, events)
		if e.Kind != replica.MirrorConnectFailed || !errors.Is(e.Err, syscall.ECONNREFUSED) || e.Backoff != backoff || e.Source != addr {
			t.Fatalf("event %d: %v from %s, %v, backoff %v; want a refused attempt at %s with backoff %v",
				i, e.Kind, e.Source, e.Err, e.Backoff, addr, backoff)
		}
	}
}

// TestMirrorReportsLockedRing: a mirror whose ring another mirror holds
// reports the failed attempts; once the ring is free it connects, and a
// source going away is a disconnect with its reason.
func TestMirrorReportsLockedRing(t *testing.T) {
	srv := meServe(t)
	path := filepath.Join(t.TempDir(), "mirror")
	other, err := shm.Create(path, shm.RingConfig{PayloadSize: 8, Capacity: 64}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events := meRun(t, replica.MirrorConfig{Source: srv.Addr().String(), Ring: path, TCPOnly: true,
		Reconnect: 5 * time.Millisecond})
	for i := range 2 {
		if e := meNext(t, events); e.Kind != replica.MirrorConnectFailed || !errors.Is(e.Err, shm.ErrLocked) {
			t.Fatalf("event %d: %v (%v), want a failed attempt wrapping shm.ErrLocked", i, e.Kind, e.Err)
		}
	}
	other.Close()
	for {
		e := meNext(t, events)
		if e.Kind == replica.MirrorConnected {
			break
		}
		if e.Kind != replica.MirrorConnectFailed || !errors.Is(e.Err, shm.ErrLocked) {
			t.Fatalf("%v (%v) while the ring was being released", e.Kind, e.Err)
		}
	}
	srv.Close()
	if e := meNext(t, events); e.Kind != replica.MirrorDisconnected || e.Err == nil {
		t.Fatalf("after the source closed: %v (%v), want a disconnect with its reason", e.Kind, e.Err)
	}
}

// meServe serves a small ring of 10 records on loopback TCP until the
// test ends.
func meServe(t *testing.T) *replica.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "source")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 8, Capacity: 64}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	for range 10 {
		if _, err := w.Push(make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := replica.NewServer(replica.ServerConfig{Ring: path, Bind: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}
