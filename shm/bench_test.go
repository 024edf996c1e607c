package shm

// Single-process ring benchmarks (push, receive, batch receive) and the
// allocation check of the hot paths, with the 64-byte benchMsg record and
// the /dev/shm ring directory that the ping-pong benchmarks share.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	p := producer[benchMsg](tb, path, opts)
	if es := p.Writer().Ring().Layout().ElementSize; es != 64 {
		tb.Fatalf("slot stride %d, want 64", es)
	}
	return p, path
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

// benchRefill keeps the ring of a receive benchmark stocked: when every
// record pushed has been taken, it pushes the next benchChunk with the
// timer stopped.
type benchRefill struct {
	p      *Producer[benchMsg]
	pushed uint64
	left   int
}

// take accounts for the n records about to be received, refilling the ring
// first when it holds none. It is inlined: the timed loop pays one compare.
func (r *benchRefill) take(b *testing.B, n int) {
	if r.left == 0 {
		r.refill(b)
	}
	r.left -= n
}

func (r *benchRefill) refill(b *testing.B) {
	b.StopTimer()
	benchFill(b, r.p, r.pushed, benchChunk)
	r.pushed += benchChunk
	r.left = benchChunk
	b.StartTimer()
}

// BenchmarkPushNoReader: Producer.Push of a 64-byte slot on a lossy ring
// nobody reads.
func BenchmarkPushNoReader(b *testing.B) {
	p, _ := benchProducer(b, ProducerOptions{Capacity: benchCap})
	benchPushLoop(b, p)
}

// benchPushLoop is the timed loop of the push benchmarks: every iteration
// pushes the next record, stamped, which must get its own sequence. It
// returns the last sequence pushed.
func benchPushLoop(b *testing.B, p *Producer[benchMsg]) uint64 {
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
	return seq
}

// BenchmarkTryRecv: successful Consumer.TryRecv only. The ring is refilled
// with benchChunk records (one full ring) while the timer is stopped, so
// every timed call returns the next record; its sequence is checked.
func BenchmarkTryRecv(b *testing.B) {
	p, path := benchProducer(b, ProducerOptions{Capacity: benchCap})
	c := consumer[benchMsg](b, path, ReadOptions{Start: StartOldest})
	r := benchRefill{p: p}
	var m benchMsg
	var want uint64
	b.ReportAllocs()
	for b.Loop() {
		r.take(b, 1)
		want++
		if !c.TryRecv(&m) || m.Seq != want || m.Pay[47] != byte(^want>>56) {
			b.Fatalf("TryRecv: got %d (payload tail %#x), want %d", m.Seq, m.Pay[47], want)
		}
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
	c := consumer[benchMsg](b, path, ReadOptions{Start: StartOldest})
	r := benchRefill{p: p}
	buf := make([]benchMsg, benchBatch)
	var want uint64
	b.ReportAllocs()
	for b.Loop() {
		r.take(b, benchBatch)
		if n := c.RecvBatch(buf); n != benchBatch {
			b.Fatalf("RecvBatch returned %d records, want %d", n, benchBatch)
		}
		for i := range buf {
			want++
			if buf[i].Seq != want {
				b.Fatalf("RecvBatch: record %d has sequence %d, want %d", i, buf[i].Seq, want)
			}
		}
	}
	if c.Lapped() != 0 || c.Seq() != want {
		b.Fatalf("consumer at %d lapped %d, want %d and 0", c.Seq(), c.Lapped(), want)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/msg")
}

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

	c := consumer[benchMsg](t, path, ReadOptions{Start: StartOldest})
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
	lc := consumer[benchMsg](t, lpath, ReadOptions{Start: StartOldest})
	var lseq uint64
	check("Producer.Push (lossless, registered reader keeping up)", func() {
		lseq++
		benchStamp(&m, lseq)
		if _, err := lp.Push(&m); err != nil || !lc.TryRecv(&m) || m.Seq != lseq {
			t.Fatalf("lossless push/recv %d: got %d, %v", lseq, m.Seq, err)
		}
	})
}
