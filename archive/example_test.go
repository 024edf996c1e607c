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
	tick := time.NewTicker(time.Millisecond) // until the three are recorded, 10 s at most
	for deadline := time.Now().Add(10 * time.Second); rec.Stats().Next <= 3 && time.Now().Before(deadline); {
		<-tick.C
	}
	tick.Stop()
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

// A Writer takes records (and gaps) at their sequences; a Reader finds
// them again by sequence or by the time they were seen.
func ExampleWriter() {
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	w, err := archive.OpenWriter(dir, archive.Options{Sync: archive.SyncSegment})
	if err != nil {
		panic(err)
	}
	ring := archive.Source{Geometry: archive.Geometry{PayloadSize: 8, Capacity: 1024}, Dev: 1, Ino: 1}
	w.Begin(ring, 100, 0)
	t0 := time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC).UnixNano()
	for seq := uint64(100); seq < 110; seq++ {
		w.Append(seq, t0+int64(seq-100)*int64(time.Second), []byte(fmt.Sprintf("tick%04d", seq)))
	}
	w.Gap(110, 119, t0+10*int64(time.Second)) // records the recorder could not read
	w.Append(120, t0+11*int64(time.Second), []byte("tick0120"))
	w.Close()

	r, _ := archive.Open(dir)
	c, _ := r.SeekTime(1, t0+int64(8500*time.Millisecond)) // the first seen at or after 14:30:08.5
	for e, err := c.Next(); err == nil; e, err = c.Next() {
		if e.Kind == archive.KindGap {
			fmt.Println("gap", e.Seq, e.Last)
			continue
		}
		fmt.Println("record", e.Seq, string(e.Rec))
	}
	c.Close()
	// Output:
	// record 109 tick0109
	// gap 110 119
	// record 120 tick0120
}
