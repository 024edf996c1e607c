package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// rcWait bounds every poll of these tests.
const rcWait = 20 * time.Second

// rcShmPath is a fresh ring path in a directory of /dev/shm removed when
// tb ends.
func rcShmPath(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "archive-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "ring")
}

// rcPayload is record seq's 64 bytes in a fixed ring: the sequence, a
// salt (which ring made it), then a pattern.
func rcPayload(seq, salt uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint64(b, seq)
	binary.LittleEndian.PutUint64(b[8:], salt)
	for i := 16; i < 64; i++ {
		b[i] = byte(seq*7 + uint64(i))
	}
	return b
}

// rcRing creates a 64-byte ring of capacity slots at path.
func rcRing(tb testing.TB, path string, capacity uint64) *shm.Writer {
	tb.Helper()
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 64, Capacity: capacity, SchemaSig: 0x5151}, shm.CreateOptions{Replace: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return w
}

// rcPush pushes records from..to (their rcPayload with salt) into w.
func rcPush(tb testing.TB, w *shm.Writer, from, to, salt uint64) {
	tb.Helper()
	for s := from; s <= to; s++ {
		got, err := w.Push(rcPayload(s, salt))
		if err != nil || got != s {
			tb.Fatalf("push %d: got %d, %v", s, got, err)
		}
	}
}

// rcRun is a Recorder run by a test.
type rcRun struct {
	r    *Recorder
	stop context.CancelFunc
	done chan error
}

// rcRecord starts a recorder of ring into w.
func rcRecord(tb testing.TB, w *Writer, cfg RecorderConfig) *rcRun {
	tb.Helper()
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Millisecond
	}
	r, err := NewRecorder(w, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &rcRun{r: r, stop: cancel, done: make(chan error, 1)}
	go func() { run.done <- r.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-run.done })
	return run
}

// until waits for the recorder to have recorded through seq.
func (run *rcRun) until(tb testing.TB, seq uint64) {
	tb.Helper()
	testenv.Until(tb, rcWait, fmt.Sprintf("the recorder to pass sequence %d", seq), func() bool { return run.r.Stats().Next > seq })
}

// end stops the recorder and returns Run's error.
func (run *rcRun) end(tb testing.TB) error {
	tb.Helper()
	run.stop()
	select {
	case err := <-run.done:
		run.done <- err // for the cleanup
		return err
	case <-time.After(rcWait):
		tb.Fatal("Run did not return after its context ended")
	}
	return nil
}

// rcEntries reads every entry of epoch.
func rcEntries(tb testing.TB, dir string, epoch uint64) []Entry {
	tb.Helper()
	r, err := Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	return readAll(tb, r, epoch, 1)
}

// rcEpochs lists the archive's epochs.
// rcArchived is the last sequence the archive in dir holds of its first
// epoch, 0 while it cannot be read (not made yet, or being written).
func rcArchived(dir string) uint64 {
	r, err := Open(dir)
	if err != nil {
		return 0
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil || len(eps) == 0 {
		return 0
	}
	return eps[0].Last
}

func rcEpochs(tb testing.TB, dir string) []EpochInfo {
	tb.Helper()
	r, err := Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil {
		tb.Fatal(err)
	}
	return eps
}

// rcWant is an expected run of entries: records from..to with a salt, or
// a gap (salt rcGap).
type rcWant struct{ from, to, salt uint64 }

const rcGap = ^uint64(0)

// rcCheck fails unless es are exactly ws, in order: every sequence
// once.
func rcCheck(tb testing.TB, es []Entry, ws ...rcWant) {
	tb.Helper()
	i := 0
	for _, w := range ws {
		if w.salt == rcGap {
			if i >= len(es) || es[i].Kind != KindGap || es[i].Seq != w.from || es[i].Last != w.to {
				tb.Fatalf("entry %d: %s, want a gap %d..%d", i, rcDescribe(es, i), w.from, w.to)
			}
			i++
			continue
		}
		for s := w.from; s <= w.to; s++ {
			if i >= len(es) || es[i].Kind != KindRecord || es[i].Seq != s || !bytes.Equal(es[i].Rec, rcPayload(s, w.salt)) {
				tb.Fatalf("entry %d: %s, want record %d (salt %d)", i, rcDescribe(es, i), s, w.salt)
			}
			i++
		}
	}
	if i != len(es) {
		tb.Fatalf("%d entries more than expected, the first %s", len(es)-i, rcDescribe(es, i))
	}
}

func rcDescribe(es []Entry, i int) string {
	if i >= len(es) {
		return "none (the end)"
	}
	e := es[i]
	return fmt.Sprintf("%s %d..%d", e.Kind, e.Seq, e.Last)
}

// rcRingRecords reads records from..to of the ring at path (ReadSlot),
// failing on any not ready.
func rcRingRecords(tb testing.TB, path string, from, to uint64) [][]byte {
	tb.Helper()
	ring, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer ring.Close()
	var out [][]byte
	for s := from; s <= to; s++ {
		p := make([]byte, ring.Layout().PayloadSize())
		if st, err := ring.ReadSlot(s, p); st != shm.SlotReady || err != nil {
			tb.Fatalf("ring %s record %d: %v, %v", path, s, st, err)
		}
		out = append(out, p)
	}
	return out
}

// rcDrain reads c until io.EOF.
func rcDrain(tb testing.TB, c *Cursor) []Entry {
	tb.Helper()
	var out []Entry
	for {
		e, err := c.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		e.Rec = bytes.Clone(e.Rec)
		out = append(out, e)
	}
}

// rcOpenWriter opens the archive in dir, closed when tb ends.
func rcOpenWriter(tb testing.TB, dir string, opts Options) *Writer {
	tb.Helper()
	w, err := OpenWriter(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return w
}
