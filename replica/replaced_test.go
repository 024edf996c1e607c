package replica_test

// A server notices that the ring it serves was replaced.

import (
	"errors"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// A producer that restarts makes a new ring at the same path: Serve notices
// and returns ErrRingReplaced (the CLI then serves the new ring).
func TestServeNoticesReplacedRing(t *testing.T) {
	_, src := pairSource(t, 1024)
	src.push(100)
	src.serve(replica.ServerConfig{})
	src.w.Close()
	w2, err := shm.Create(src.path, shm.RingConfig{PayloadSize: recordSize, Capacity: 1024}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	select {
	case err := <-src.done:
		if !errors.Is(err, replica.ErrRingReplaced) {
			t.Fatalf("Serve returned %v, want ErrRingReplaced", err)
		}
		src.done <- nil // for the cleanup's close
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not notice the replaced ring")
	}
}
