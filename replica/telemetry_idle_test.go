package replica

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// TestTelemetryIdlesAndWakes: once write_seq stands still the telemetry
// loop goes idle (teleIdle), and the next record wakes it through the
// sender: with the idle interval longer than the test, only that wake can
// get the record sampled.
func TestTelemetryIdlesAndWakes(t *testing.T) {
	old := seqIdleEvery
	seqIdleEvery = time.Hour
	defer func() { seqIdleEvery = old }()
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 56, Capacity: 1024}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s, err := NewServer(ServerConfig{Ring: path, Bind: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() { cancel(); s.Close(); <-done }()
	testenv.Until(t, 5*time.Second, "the telemetry loop idle", s.teleIdle.Load)
	if _, err := w.Push(make([]byte, 56)); err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 5*time.Second, "the record sampled by the woken loop", func() bool {
		s.tele.mu.Lock()
		defer s.tele.mu.Unlock()
		return s.tele.index.last == 1
	})
}
