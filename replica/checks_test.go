package replica_test

// Checks of what a mirror ring holds (shared by the tests of this
// package): its records read back in order, a live reader that checks them
// as they come, and slot-by-slot comparisons with the source ring.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// readAll reads every record the ring at path retains, in order, checking
// each synthetic record's checksum and sequence.
func readAll(t *testing.T, path string) (seqs []uint64, lapped uint64) {
	t.Helper()
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	buf := make([]byte, rd.Ring().Layout().PayloadSize())
	for {
		seq, ok := rd.TryRecv(buf)
		if !ok {
			return seqs, rd.Lapped()
		}
		got, _, err := synth.Check(buf)
		if err != nil || got != seq {
			t.Fatalf("record %d: carries %d, %v", seq, got, err)
		}
		seqs = appendIncreasing(t, seqs, seq)
	}
}

// appendIncreasing appends seq to seqs, failing the test unless it comes
// after the last of them.
func appendIncreasing(t *testing.T, seqs []uint64, seq uint64) []uint64 {
	t.Helper()
	if len(seqs) > 0 && seq <= seqs[len(seqs)-1] {
		t.Fatalf("record %d after %d", seq, seqs[len(seqs)-1])
	}
	return append(seqs, seq)
}

// checkContiguous reports whether seqs is exactly first..last.
func checkContiguous(seqs []uint64, first, last uint64) error {
	if uint64(len(seqs)) != last-first+1 || seqs[0] != first || seqs[len(seqs)-1] != last {
		return fmt.Errorf("ring holds %d records %v...%v, want exactly %d..%d", len(seqs), seqs[:min(len(seqs), 3)], seqs[max(len(seqs)-3, 0):], first, last)
	}
	return nil
}

// ringHolds checks that the ring at path holds exactly first..last, in
// order, every record whole; it returns how many records a reader from the
// oldest skipped.
func ringHolds(t *testing.T, path string, first, last uint64) (skipped uint64) {
	t.Helper()
	seqs, lapped := readAll(t, path)
	if err := checkContiguous(seqs, first, last); err != nil {
		t.Fatal(err)
	}
	return lapped
}

// expectSeqs is ringHolds, the reader skipping `skipped` records (holes of
// a sparse ring) before first.
func expectSeqs(t *testing.T, path string, first, last, skipped uint64) {
	t.Helper()
	if lapped := ringHolds(t, path, first, last); lapped != skipped {
		t.Fatalf("a reader from the oldest skipped %d records, want %d", lapped, skipped)
	}
}

// liveReader reads a ring from the oldest record while it is written,
// checking every record it gets (synth checksum, sequence, strictly
// increasing) until stopped.
type liveReader struct {
	progress  atomic.Uint64 // the last sequence read
	halt      atomic.Bool
	done      chan error
	n, lapped uint64
}

func readLive(t *testing.T, path string) *liveReader {
	t.Helper()
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	lr := &liveReader{done: make(chan error, 1)}
	go func() {
		defer rd.Close()
		buf := make([]byte, rd.Ring().Layout().PayloadSize())
		for {
			seq, ok := rd.TryRecv(buf)
			switch got, _, err := synth.Check(buf); {
			case !ok && lr.halt.Load():
				lr.lapped = rd.Lapped()
				lr.done <- nil
				return
			case !ok:
				time.Sleep(50 * time.Microsecond)
			case err != nil || got != seq || seq <= lr.progress.Load():
				lr.done <- fmt.Errorf("record %d (after %d) carries %d: %v (disorder or damage)", seq, lr.progress.Load(), got, err)
				return
			default:
				lr.n++
				lr.progress.Store(seq)
			}
		}
	}()
	return lr
}

// stop ends the reader once it has read all there is and reports how many
// records it checked and skipped, and the last one.
func (lr *liveReader) stop(t *testing.T) (n, lapped, last uint64) {
	t.Helper()
	lr.halt.Store(true)
	select {
	case err := <-lr.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("checker did not stop")
	}
	return lr.n, lr.lapped, lr.progress.Load()
}

// openMirrored opens the source and mirror rings, checks that the mirror
// has the source's geometry and write_seq w, and hands them to check.
func openMirrored(t *testing.T, src, dst string, check func(a, b *shm.Ring, w uint64)) {
	t.Helper()
	a, err := shm.Open(src, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := shm.Open(dst, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := sameGeometry(a.Layout(), b.Layout()); err != nil {
		t.Fatal(err)
	}
	w := a.WriteSeq()
	if b.WriteSeq() != w {
		t.Fatalf("mirror write_seq %d, source %d", b.WriteSeq(), w)
	}
	check(a, b, w)
}

// sameSlots checks that the mirror ring holds, for every sequence from
// `from` to the source's write_seq, exactly the source's slot bytes.
func sameSlots(t *testing.T, src, dst string, from uint64) {
	t.Helper()
	openMirrored(t, src, dst, func(a, b *shm.Ring, w uint64) {
		t.Helper()
		pa := make([]byte, a.Layout().PayloadSize())
		pb := make([]byte, len(pa))
		for seq := max(from, a.Oldest()); seq <= w; seq++ {
			sa, _ := a.ReadSlot(seq, pa)
			sb, _ := b.ReadSlot(seq, pb)
			if sa != shm.SlotReady || sb != shm.SlotReady || !bytes.Equal(pa, pb) {
				t.Fatalf("record %d: source %v, mirror %v, equal %v", seq, sa, sb, bytes.Equal(pa, pb))
			}
		}
	})
}

// sameGeometry compares the layouts a mirror must share with its source.
func sameGeometry(src, dst shm.Layout) error {
	want := dst
	want.Flags = src.Flags
	if want != src {
		return fmt.Errorf("mirror layout %+v, source %+v", dst, src)
	}
	if dst.Flags&(shm.FlagSparse|shm.FlagLatestWins|shm.FlagSPMC) != shm.FlagSparse|shm.FlagLatestWins|shm.FlagSPMC {
		return errors.New("mirror ring is not SPMC | LATEST_WINS | SPARSE")
	}
	return nil
}

// wantAll fails the test unless the mirror wrote n records and no gaps
// and, if transport is not empty, took the live stream over it.
func wantAll(t *testing.T, st replica.MirrorStats, n uint64, transport string) {
	t.Helper()
	if st.Records != n || st.Gaps != 0 || (transport != "" && st.Transport != transport) {
		t.Fatalf("mirror stats %+v, want %d records, no gaps, transport %q", st, n, transport)
	}
}

// oneConnection fails the test if the mirror had to reconnect: a loss
// the protocol repairs must not cost the connection (the events logged by
// logEvents say why the source ended it).
func oneConnection(t *testing.T, st replica.MirrorStats) {
	t.Helper()
	if st.Connects != 1 {
		t.Fatalf("mirror connected %d times: the source dropped the connection; %+v", st.Connects, st)
	}
}

// logEvents logs the mirror connections the source saw end in an error.
func logEvents(t *testing.T) func(replica.ServerEvent) {
	start := time.Now()
	return func(e replica.ServerEvent) {
		if e.Kind != replica.EventConnected && e.Err != nil && !errors.Is(e.Err, net.ErrClosed) {
			t.Logf("source, after %v: mirror %v %v: %v", time.Since(start).Round(time.Millisecond), e.Peer, e.Kind, e.Err)
		}
	}
}
