package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// benchMsg is the record of the ring benchmarks: 56 bytes, so that with the
// 8-byte slot sequence a slot is one 64-byte cache line.
type benchMsg struct {
	Seq uint64
	Pay [48]byte
}

// The stride must be exactly 64 bytes: a compile-time check both ways.
var (
	_ [unsafe.Sizeof(benchMsg{}) - 56]struct{}
	_ [56 - unsafe.Sizeof(benchMsg{})]struct{}
)

const (
	benchCap   = 4096     // slots of the benchmark rings (256 KiB of slots)
	benchChunk = benchCap // records pushed per refill of the receive benchmarks
	benchBatch = 32       // RecvBatch buffer
)

// benchStamp fills m as message seq: the sequence in Seq and, complemented,
// in the last payload word, so that a stale or torn record shows.
func benchStamp(m *benchMsg, seq uint64) {
	m.Seq = seq
	*(*uint64)(unsafe.Pointer(&m.Pay[40])) = ^seq
}

const benchDirPrefix = "ringfire-bench-"

var benchSweepOnce sync.Once

// benchDir is a fresh directory for ring files, on /dev/shm when the
// machine has it (the usual home of rings), removed when tb ends. Its name
// carries this process's id, so that a later run can remove what a process
// that died before its cleanups (killed, or a panic elsewhere in the test
// binary) left in /dev/shm, which is memory.
func benchDir(tb testing.TB) string {
	tb.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		benchSweepOnce.Do(func() { benchSweep("/dev/shm") })
		if dir, err := os.MkdirTemp("/dev/shm", fmt.Sprintf("%s%d-", benchDirPrefix, os.Getpid())); err == nil {
			tb.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return tb.TempDir()
}

// benchSweep removes the benchDir directories in root whose process no
// longer exists.
func benchSweep(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), benchDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		ps, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(ps)
		if err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

func benchProducer(tb testing.TB, opts ProducerOptions) (*Producer[benchMsg], string) {
	tb.Helper()
	path := filepath.Join(benchDir(tb), "ring")
	p, err := NewProducer[benchMsg](path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	if es := p.Writer().Ring().Layout().ElementSize; es != 64 {
		tb.Fatalf("slot stride %d, want 64", es)
	}
	return p, path
}

func benchConsumer(tb testing.TB, path string, opts ReadOptions) *Consumer[benchMsg] {
	tb.Helper()
	c, err := NewConsumer[benchMsg](path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// benchFill pushes records from+1 .. from+n.
func benchFill(tb testing.TB, p *Producer[benchMsg], from uint64, n int) {
	var m benchMsg
	for i := range uint64(n) {
		benchStamp(&m, from+1+i)
		if s, err := p.Push(&m); err != nil || s != m.Seq {
			tb.Fatalf("push %d: got sequence %d, %v", m.Seq, s, err)
		}
	}
}

// BenchmarkPushNoReader: Producer.Push of a 64-byte slot on a lossy ring
// nobody reads.
func BenchmarkPushNoReader(b *testing.B) {
	p, _ := benchProducer(b, ProducerOptions{Capacity: benchCap})
	var m benchMsg
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		seq++
		benchStamp(&m, seq)
		if s, err := p.Push(&m); err != nil || s != seq {
			b.Fatalf("push %d: got sequence %d, %v", seq, s, err)
		}
	}
}

// BenchmarkTryRecv: successful Consumer.TryRecv only. The ring is refilled
// with benchChunk records (one full ring) while the timer is stopped, so
// every timed call returns the next record; its sequence is checked.
func BenchmarkTryRecv(b *testing.B) {
	p, path := benchProducer(b, ProducerOptions{Capacity: benchCap})
	c := benchConsumer(b, path, ReadOptions{Start: StartOldest})
	var m benchMsg
	var pushed, want uint64
	left := 0
	b.ReportAllocs()
	for b.Loop() {
		if left == 0 {
			b.StopTimer()
			benchFill(b, p, pushed, benchChunk)
			pushed += benchChunk
			left = benchChunk
			b.StartTimer()
		}
		want++
		if !c.TryRecv(&m) || m.Seq != want || m.Pay[47] != byte(^want>>56) {
			b.Fatalf("TryRecv: got %d (payload tail %#x), want %d", m.Seq, m.Pay[47], want)
		}
		left--
	}
	if c.Lapped() != 0 {
		b.Fatalf("consumer lapped %d records", c.Lapped())
	}
}

// BenchmarkRecvBatch32: Consumer.RecvBatch into a 32-record buffer, every
// call returning a full batch (refills as in BenchmarkTryRecv). One op is
// one batch; ns/msg is the time per record. Every record's sequence is
// checked.
func BenchmarkRecvBatch32(b *testing.B) {
	p, path := benchProducer(b, ProducerOptions{Capacity: benchCap})
	c := benchConsumer(b, path, ReadOptions{Start: StartOldest})
	buf := make([]benchMsg, benchBatch)
	var pushed, want uint64
	left := 0
	b.ReportAllocs()
	for b.Loop() {
		if left == 0 {
			b.StopTimer()
			benchFill(b, p, pushed, benchChunk)
			pushed += benchChunk
			left = benchChunk
			b.StartTimer()
		}
		if n := c.RecvBatch(buf); n != benchBatch {
			b.Fatalf("RecvBatch returned %d records, want %d", n, benchBatch)
		}
		for i := range buf {
			want++
			if buf[i].Seq != want {
				b.Fatalf("RecvBatch: record %d has sequence %d, want %d", i, buf[i].Seq, want)
			}
		}
		left -= benchBatch
	}
	if c.Lapped() != 0 || c.Seq() != want {
		b.Fatalf("consumer at %d lapped %d, want %d and 0", c.Seq(), c.Lapped(), want)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/msg")
}

// benchDrainer is a reader goroutine, locked to its OS thread, that drains
// a ring with RecvBatch while the benchmark goroutine pushes.
type benchDrainer struct {
	c        *Consumer[benchMsg]
	lossless bool
	final    atomic.Uint64 // last sequence pushed, set before stop
	stop     atomic.Bool
	done     chan error
}

// benchIdleLimit bounds how long the drainer may see an empty ring before it
// gives up.
const benchIdleLimit = 10 * time.Second

func startDrainer(c *Consumer[benchMsg], lossless bool) *benchDrainer {
	d := &benchDrainer{c: c, lossless: lossless, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		close(ready)
		err := d.run()
		if err != nil {
			// Unregister, so a lossless producer is not held back by a
			// reader that no longer reads; the benchmark reports err.
			c.Close()
		}
		d.done <- err
	}()
	<-ready
	return d
}

func (d *benchDrainer) run() error {
	var buf [benchBatch]benchMsg
	var last uint64
	idle := 0
	lastProgress := time.Now()
	for {
		n := d.c.RecvBatch(buf[:])
		if n > 0 {
			for i := range n {
				s := buf[i].Seq
				// Lossless: every record, in order. Lossy: increasing, laps
				// may skip some.
				if s <= last || (d.lossless && s != last+1) || buf[i].Pay[40] != byte(^s) {
					return fmt.Errorf("drainer: record %d after %d (payload %#x)", s, last, buf[i].Pay[40])
				}
				last = s
			}
			idle = 0
			continue
		}
		idle++
		if idle&1023 != 0 {
			continue
		}
		if d.stop.Load() && d.c.Reader().Next() > d.final.Load() {
			return nil
		}
		if now := time.Now(); idle == 1024 {
			lastProgress = now
		} else if now.Sub(lastProgress) > benchIdleLimit {
			return fmt.Errorf("drainer: no record for %v (next %d, stop %v)", benchIdleLimit, d.c.Reader().Next(), d.stop.Load())
		}
	}
}

// finish stops the drainer once it has read up to final and waits for it.
func (d *benchDrainer) finish(final uint64) error {
	d.final.Store(final)
	d.stop.Store(true)
	select {
	case err := <-d.done:
		return err
	case <-time.After(2 * benchIdleLimit):
		return fmt.Errorf("drainer did not stop within %v", 2*benchIdleLimit)
	}
}

func benchPushWithReader(b *testing.B, lossless bool) {
	p, path := benchProducer(b, ProducerOptions{Capacity: benchCap, Lossless: lossless})
	c := benchConsumer(b, path, ReadOptions{Start: StartOldest, Name: "bench-drainer"})
	if c.Reader().Registered() != lossless {
		b.Fatalf("reader registered = %v on a lossless=%v ring", c.Reader().Registered(), lossless)
	}
	d := startDrainer(c, lossless)
	var m benchMsg
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		seq++
		benchStamp(&m, seq)
		if s, err := p.Push(&m); err != nil || s != seq {
			b.Fatalf("push %d: got sequence %d, %v", seq, s, err)
		}
	}
	if err := d.finish(seq); err != nil {
		b.Fatal(err)
	}
	recv, lapped := c.Reader().Received(), c.Lapped()
	if recv+lapped != seq || (lossless && lapped != 0) {
		b.Fatalf("reader received %d and lapped %d of %d records", recv, lapped, seq)
	}
	b.ReportMetric(float64(lapped)/float64(b.N), "lapped/op")
	if lossless {
		b.ReportMetric(float64(p.Writer().Stats().Backpressure)/float64(b.N), "waits/op")
	}
}

// BenchmarkPushLossyReader: Producer.Push on a lossy ring while a reader
// goroutine (its own OS thread, the other core) drains it with RecvBatch;
// lapped/op is the fraction of records the reader missed.
func BenchmarkPushLossyReader(b *testing.B) { benchPushWithReader(b, false) }

// BenchmarkPushLosslessReader: Producer.Push on a lossless ring with one
// registered reader draining it as above; the producer waits whenever the
// reader is a full ring behind (waits/op: pushes that found the gate
// closed). The reader must see every record.
func BenchmarkPushLosslessReader(b *testing.B) { benchPushWithReader(b, true) }

// TestHotPathAllocs: the hot paths allocate nothing (tolerance-free; this
// holds under the race detector as well).
func TestHotPathAllocs(t *testing.T) {
	const runs = 1000
	p, path := benchProducer(t, ProducerOptions{Capacity: 1 << 16})
	var m benchMsg
	seq := uint64(0)
	push := func() {
		seq++
		benchStamp(&m, seq)
		if s, err := p.Push(&m); err != nil || s != seq {
			t.Fatalf("push %d: %d, %v", seq, s, err)
		}
	}
	check := func(name string, f func()) {
		t.Helper()
		if a := testing.AllocsPerRun(runs, f); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, a)
		}
	}

	check("Producer.Push", push)

	c := benchConsumer(t, path, ReadOptions{Start: StartOldest})
	want := uint64(0)
	check("Consumer.TryRecv", func() {
		want++
		if !c.TryRecv(&m) || m.Seq != want {
			t.Fatalf("TryRecv: %d, want %d", m.Seq, want)
		}
	})

	benchFill(t, p, seq, (runs+1)*benchBatch)
	seq += (runs + 1) * benchBatch
	buf := make([]benchMsg, benchBatch)
	check("Consumer.RecvBatch", func() {
		if n := c.RecvBatch(buf); n != benchBatch || buf[0].Seq != want+1 {
			t.Fatalf("RecvBatch: %d records from %d, want %d from %d", n, buf[0].Seq, benchBatch, want+1)
		}
		want += benchBatch
	})

	check("Consumer.Recv", func() {
		push()
		want++
		if err := c.Recv(&m, time.Second); err != nil || m.Seq != want {
			t.Fatalf("Recv: %d, %v; want %d", m.Seq, err, want)
		}
	})

	check("Consumer.TryRecv (empty)", func() {
		if c.TryRecv(&m) {
			t.Fatal("TryRecv on a drained ring returned a record")
		}
	})

	raw := make([]byte, unsafe.Sizeof(benchMsg{}))
	w := p.Writer()
	check("Writer.Push", func() {
		seq++
		if s, err := w.Push(raw); err != nil || s != seq {
			t.Fatalf("Writer.Push: %d, %v; want %d", s, err, seq)
		}
	})

	lp, lpath := benchProducer(t, ProducerOptions{Capacity: 64, Lossless: true})
	lc := benchConsumer(t, lpath, ReadOptions{Start: StartOldest})
	var lseq uint64
	check("Producer.Push (lossless, registered reader keeping up)", func() {
		lseq++
		benchStamp(&m, lseq)
		if _, err := lp.Push(&m); err != nil || !lc.TryRecv(&m) || m.Seq != lseq {
			t.Fatalf("lossless push/recv %d: got %d, %v", lseq, m.Seq, err)
		}
	})
}
