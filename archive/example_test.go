package archive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/shm"
)

// A recorder follows a ring into an archive; Replay writes the archive
// back into a ring, at the records' own sequence numbers.
func ExampleRecorder() {
	tmp, _ := os.MkdirTemp("/dev/shm", "example-")
	defer os.RemoveAll(tmp)
	ringPath, dir := filepath.Join(tmp, "prices"), filepath.Join(tmp, "archive")

	// A producer's ring of 16-byte records, and three of them.
	p, err := shm.Create(ringPath, shm.RingConfig{PayloadSize: 16, Capacity: 64}, shm.CreateOptions{})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	for _, s := range []string{"EURUSD 1.0842", "EURUSD 1.0843", "EURUSD 1.0841"} {
		p.Push([]byte(s))
	}

	// Record them: Run follows the ring until its context ends.
	w, err := archive.OpenWriter(dir, archive.Options{})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	rec, err := archive.NewRecorder(w, archive.RecorderConfig{Ring: ringPath, Start: archive.StartOldest})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- rec.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); rec.Stats().Next <= 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		panic(err)
	}
	st := rec.Stats()
	fmt.Printf("recorded %d records of epoch %d\n", st.Records, st.Epoch)

	// Read the archive from sequence 2 on.
	r, err := archive.Open(dir)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	c, err := r.Seek(1, 2)
	if err != nil {
		panic(err)
	}
	for e, err := c.Next(); err == nil; e, err = c.Next() {
		fmt.Printf("%d %s\n", e.Seq, e.Rec[:13])
	}
	c.Close()

	// Replay the epoch into another ring, as fast as it goes.
	rs, err := archive.Replay(context.Background(), r, archive.ReplayConfig{Ring: filepath.Join(tmp, "replay")})
	if err != nil {
		panic(err)
	}
	fmt.Printf("replayed %d..%d\n", rs.First, rs.Last)
	// Output:
	// recorded 3 records of epoch 1
	// 2 EURUSD 1.0843
	// 3 EURUSD 1.0841
	// replayed 1..3
}
